# Cross build for ARMv6 boards (Raspberry Pi 1, Zero, Zero W, CM1) running Raspberry Pi OS 32-bit:
# one static binary made with Debian's armel compiler (crossbuild-essential-armel: ARMv5TE,
# soft-float ABI, no Thumb-2) against armel libraries. Debian's armhf is ARMv7 (Thumb-2, VFPv3) and
# dies with SIGILL on those boards; Raspberry Pi OS's own armhf (ARMv6 + VFPv2) is not in Debian's
# registry. Static because the armel ABI (soft-float) cannot load Raspberry Pi OS's hard-float
# libraries: the binary needs nothing from the system but the kernel (docs/packaging.md, "ARMv6").
#   scripts/armv6-test.sh              (sysroot, static prometheus-cpp, build, tests, package)
#   cmake -S . -B build-armv6 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armv6.cmake
# The sysroot (-DDISKPROBE_SYSROOT, default build/sysroot-armel) holds Debian's armel -dev packages
# (scripts/make-sysroot.sh armel) and, in /opt/diskprobe-static, the libraries Debian ships without
# a static archive, built from their Debian source packages (scripts/armv6-static-deps.sh).
set(DISKPROBE_CROSS_ARCH armel)
set(DISKPROBE_CROSS_TRIPLET arm-linux-gnueabi)
set(DISKPROBE_CROSS_PROCESSOR armv6l)
set(DISKPROBE_QEMU qemu-arm-static)
# 64-bit off_t and directory offsets on 32-bit (as cmake/toolchain-armhf.cmake says).
# -Wno-psabi: GCC's note that the AAPCS passing of some structs changed in GCC 7.1, printed for
# every std::vector growth; nothing here mixes objects from before GCC 7.
set(CMAKE_C_FLAGS_INIT "-D_FILE_OFFSET_BITS=64")
set(CMAKE_CXX_FLAGS_INIT "-D_FILE_OFFSET_BITS=64 -Wno-psabi")
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross.cmake)
# Static archives only, a fully static link (DISKPROBE_STATIC in CMakeLists.txt: -static, TLS
# linked in instead of dlopen'ed, the bench without its Pushgateway client).
set(DISKPROBE_STATIC ON CACHE BOOL "Fully static executables" FORCE)
list(APPEND CMAKE_PREFIX_PATH /opt/diskprobe-static)
# Every test binary runs on an emulated ARM1176 (the Pi 1/Zero core), which has no ARMv7
# instruction: one in the binary is a SIGILL, so a passing test run is the proof. No -L: a static
# binary loads nothing from a sysroot.
find_program(DISKPROBE_QEMU_PATH ${DISKPROBE_QEMU})
if(DISKPROBE_QEMU_PATH)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${DISKPROBE_QEMU_PATH};-cpu;arm1176")
endif()
