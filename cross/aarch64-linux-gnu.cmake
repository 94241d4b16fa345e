# aarch64-linux-gnu.cmake — CMake toolchain for 64-bit ARM Linux (glibc) with
# Debian's gcc-aarch64-linux-gnu.
#
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cross/aarch64-linux-gnu.cmake
#
# CMAKE_CROSSCOMPILING_EMULATOR is qemu-aarch64 running the cross sysroot's
# dynamic loader on the program with the sysroot's libraries, so CTest runs the
# aarch64 test programs unchanged. Not qemu's -L: that also maps every absolute
# path the program opens into the sysroot when one exists there, "/" included,
# so a walk from "/" (platform/posix/walk.c) would start in the sysroot.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(OUTPOST_CROSS_TARGET linux-arm64)
set(OUTPOST_CROSS_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_AR aarch64-linux-gnu-gcc-ar CACHE FILEPATH "")
set(CMAKE_RANLIB aarch64-linux-gnu-gcc-ranlib CACHE FILEPATH "")

find_program(_outpost_qemu NAMES qemu-aarch64 qemu-aarch64-static)
if(_outpost_qemu)
  set(CMAKE_CROSSCOMPILING_EMULATOR
      "${_outpost_qemu};/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1;--library-path;/usr/aarch64-linux-gnu/lib")
endif()

include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")
