# Cross build for 64-bit Raspberry Pi OS / Debian arm64 (Pi 3, 4, 5, Zero 2 W):
#   scripts/install-deps.sh cross && scripts/make-sysroot.sh arm64
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm64.cmake
#   cmake --build build-arm64 -j2 && ctest --test-dir build-arm64 -E "^(e2e_|deploy_)"   # under qemu
# or all of it: scripts/cross-test.sh arm64
set(DISKPROBE_CROSS_ARCH arm64)
set(DISKPROBE_CROSS_TRIPLET aarch64-linux-gnu)
set(DISKPROBE_CROSS_PROCESSOR aarch64)
set(DISKPROBE_QEMU qemu-aarch64-static)
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross.cmake)
