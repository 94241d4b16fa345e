# x86_64-linux-gnu.cmake — CMake "toolchain" for outpost's static x86-64
# Linux build (scripts/release linux-x86_64): the build machine's own gcc,
# but against the static dependency set of cross/build-deps linux-x86_64
# instead of Debian's shared libraries (glibc stays dynamic: NSS).
#
#   cmake -S . -B build-rel -DCMAKE_TOOLCHAIN_FILE=cross/x86_64-linux-gnu.cmake
#
# Not a cross build (CMAKE_SYSTEM_NAME is left alone): the tests, the
# integration suite included, run natively.
set(OUTPOST_CROSS_TARGET linux-x86_64)
set(OUTPOST_CROSS_TRIPLE x86_64-linux-gnu)

set(CMAKE_C_COMPILER gcc)
set(CMAKE_AR gcc-ar CACHE FILEPATH "")
set(CMAKE_RANLIB gcc-ranlib CACHE FILEPATH "")

include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")
