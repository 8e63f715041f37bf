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
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross.cmake)
