# x86_64-w64-mingw32.cmake — CMake toolchain for 64-bit Windows with
# Debian's mingw-w64 (the win32 thread model: no winpthread DLL to ship).
#
#   cmake -S . -B build-win -DCMAKE_TOOLCHAIN_FILE=cross/x86_64-w64-mingw32.cmake
#
# CMAKE_CROSSCOMPILING_EMULATOR is wine (through cross/wine-run), so CTest
# runs the .exe test programs unchanged and try_run checks (libarchive's
# configure) work instead of crashing CMake 3.25.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(OUTPOST_CROSS_TARGET windows-x86_64)
set(OUTPOST_CROSS_TRIPLE x86_64-w64-mingw32)

find_program(_outpost_mingw_gcc NAMES x86_64-w64-mingw32-gcc-win32 x86_64-w64-mingw32-gcc)
if(NOT _outpost_mingw_gcc)
  message(FATAL_ERROR "x86_64-w64-mingw32-gcc not found: run scripts/setup --cross")
endif()
set(CMAKE_C_COMPILER "${_outpost_mingw_gcc}")
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_AR x86_64-w64-mingw32-gcc-ar-win32 CACHE FILEPATH "")
set(CMAKE_RANLIB x86_64-w64-mingw32-gcc-ranlib-win32 CACHE FILEPATH "")

set(CMAKE_CROSSCOMPILING_EMULATOR "${CMAKE_CURRENT_LIST_DIR}/wine-run")

include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")
