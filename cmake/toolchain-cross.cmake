# Shared part of cmake/toolchain-arm64.cmake and cmake/toolchain-armhf.cmake: Debian's cross
# compilers (crossbuild-essential-<arch>) against a sysroot from scripts/make-sysroot.sh, and
# qemu-user as CMAKE_CROSSCOMPILING_EMULATOR so that ctest (and gtest_discover_tests at build
# time) run the target binaries.
# Inputs: DISKPROBE_CROSS_ARCH (arm64|armhf), DISKPROBE_CROSS_TRIPLET, DISKPROBE_CROSS_PROCESSOR,
# DISKPROBE_QEMU; the sysroot is -DDISKPROBE_SYSROOT=... or build/sysroot-<arch>.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${DISKPROBE_CROSS_PROCESSOR})
set(CMAKE_LIBRARY_ARCHITECTURE ${DISKPROBE_CROSS_TRIPLET})
set(CMAKE_C_COMPILER ${DISKPROBE_CROSS_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${DISKPROBE_CROSS_TRIPLET}-g++)

# try_compile projects see only the variables listed here.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES DISKPROBE_SYSROOT)
if(NOT DISKPROBE_SYSROOT)
  set(DISKPROBE_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../build/sysroot-${DISKPROBE_CROSS_ARCH}")
endif()
get_filename_component(DISKPROBE_SYSROOT "${DISKPROBE_SYSROOT}" ABSOLUTE)
if(NOT EXISTS "${DISKPROBE_SYSROOT}/usr/include")
  message(FATAL_ERROR "no sysroot at ${DISKPROBE_SYSROOT}: run scripts/make-sysroot.sh ${DISKPROBE_CROSS_ARCH}")
endif()
set(CMAKE_SYSROOT "${DISKPROBE_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH "${DISKPROBE_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config (liburing) from the sysroot only.
set(ENV{PKG_CONFIG_DIR} "")
set(ENV{PKG_CONFIG_LIBDIR} "${DISKPROBE_SYSROOT}/usr/lib/${DISKPROBE_CROSS_TRIPLET}/pkgconfig:${DISKPROBE_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${DISKPROBE_SYSROOT}")
# The linker must find the sysroot's indirect dependencies (libcurl's, libssl's ...) too.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${DISKPROBE_SYSROOT}/usr/lib/${DISKPROBE_CROSS_TRIPLET}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${DISKPROBE_SYSROOT}/usr/lib/${DISKPROBE_CROSS_TRIPLET}")

find_program(DISKPROBE_QEMU_PATH ${DISKPROBE_QEMU})
if(DISKPROBE_QEMU_PATH)
  # -L: the target's dynamic loader and libraries come from the sysroot.
  set(CMAKE_CROSSCOMPILING_EMULATOR "${DISKPROBE_QEMU_PATH};-L;${DISKPROBE_SYSROOT}")
endif()
