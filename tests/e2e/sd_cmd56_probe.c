/* The CMD56 read the exporter sends (exporter/sources/sd_vendor_health.cpp, SendCmd56: opcode 56,
 * the layout's argument, one 512-byte block, flags SPI_R1 | R1 | ADTC), as a static program for a
 * guest that has none of the exporter's libraries (tests/e2e/sd_cmd56_qemu_e2e.sh).
 * Usage: sd_cmd56_probe NODE ARG [dump|drop]. Prints the errno the kernel returns, or the reply's
 * first bytes (dump: all 512). drop: setuid(65534) after open(2), so the ioctl runs without any
 * capability, as the exporter's service user does without the opt-in drop-in. */
#include <errno.h>
#include <fcntl.h>
#include <linux/major.h>
#include <linux/mmc/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
  unsigned char b[512];
  struct mmc_ioc_cmd c;
  if (argc < 3) return 2;
  int fd = open(argv[1], O_RDONLY | O_NONBLOCK);
  if (fd < 0) {
    printf("cmd56 %s: open: %s\n", argv[1], strerror(errno));
    return 1;
  }
  if (argc > 3 && strcmp(argv[3], "drop") == 0 && setuid(65534) != 0) {
    perror("setuid");
    return 1;
  }
  memset(&c, 0, sizeof c);
  memset(b, 0, sizeof b);
  c.opcode = 56;
  c.arg = (unsigned)strtoul(argv[2], 0, 0);
  c.flags = (1 << 7) | (1 << 0) | (1 << 2) | (1 << 4) | (1 << 5);
  c.blksz = 512;
  c.blocks = 1;
  mmc_ioc_cmd_set_data(c, b);
  if (ioctl(fd, MMC_IOC_CMD, &c) < 0) {
    int e = errno;
    printf("cmd56 %s arg %s%s: errno %d (%s)\n", argv[1], argv[2], argc > 3 ? " without capabilities" : "", e, strerror(e));
    return 3;
  }
  if (argc > 3 && strcmp(argv[3], "dump") == 0)
    for (int i = 0; i < 512; i++) printf("%02x%s", b[i], i % 16 == 15 ? "\n" : " ");
  printf("cmd56 %s arg %s: ok, bytes 0-7: %02x %02x %02x %02x %02x %02x %02x %02x\n", argv[1], argv[2], b[0], b[1], b[2],
         b[3], b[4], b[5], b[6], b[7]);
  return 0;
}
