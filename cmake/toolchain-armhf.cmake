# Cross build for 32-bit Raspberry Pi OS / Debian armhf (ARMv7 hard-float; Pi 2 and later, and
# 32-bit images on newer Pis. Raspberry Pi OS armhf is ARMv6 for Pi 1/Zero: Debian's armhf
# compiler does not target those).
#   scripts/install-deps.sh cross && scripts/make-sysroot.sh armhf
#   cmake -S . -B build-armhf -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake
# or all of it: scripts/cross-test.sh armhf
set(DISKPROBE_CROSS_ARCH armhf)
set(DISKPROBE_CROSS_TRIPLET arm-linux-gnueabihf)
set(DISKPROBE_CROSS_PROCESSOR armv7l)
set(DISKPROBE_QEMU qemu-arm-static)
# 64-bit off_t and directory offsets on 32-bit: the probes pread() beyond 2 GiB on any real card,
# and readdir() fails with EOVERFLOW on 64-bit directory cookies (ext4 hashes under qemu-arm on a
# 64-bit kernel; large file systems) without it.
set(CMAKE_C_FLAGS_INIT "-D_FILE_OFFSET_BITS=64")
set(CMAKE_CXX_FLAGS_INIT "-D_FILE_OFFSET_BITS=64")
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross.cmake)
