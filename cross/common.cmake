# common.cmake — shared part of outpost's cross toolchain files.
#
# The including toolchain file sets OUTPOST_CROSS_TARGET ("windows-x86_64",
# "linux-arm64" or "linux-x86_64", as cross/build-deps names its targets)
# and OUTPOST_CROSS_TRIPLE. This file finds the dependency prefix that
# cross/build-deps fills (static zlib, Mbed TLS, libcurl, cJSON,
# libarchive, cmocka) and confines find_* to it and the target's sysroot, so
# nothing of the build machine's own libraries leaks into a cross build.
#
# The prefix is cross/build-deps's for the target (cross/cache.cmake says
# where: under OUTPOST_CROSS_CACHE, which defaults to
# ${XDG_CACHE_HOME:-$HOME/.cache}/outpost-cross, by Debian release and
# target); -DOUTPOST_CROSS_PREFIX=... or the environment's overrides it.

if(NOT OUTPOST_CROSS_PREFIX)
  if(DEFINED ENV{OUTPOST_CROSS_PREFIX} AND NOT "$ENV{OUTPOST_CROSS_PREFIX}" STREQUAL "")
    set(OUTPOST_CROSS_PREFIX "$ENV{OUTPOST_CROSS_PREFIX}")
  else()
    include("${CMAKE_CURRENT_LIST_DIR}/cache.cmake")
    outpost_cross_prefix(OUTPOST_CROSS_PREFIX "${OUTPOST_CROSS_TARGET}")
  endif()
endif()
# Toolchain files are read again by every try_compile: pass the values on.
set(OUTPOST_CROSS_PREFIX "${OUTPOST_CROSS_PREFIX}" CACHE PATH "Static dependencies built by cross/build-deps")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES OUTPOST_CROSS_PREFIX OUTPOST_CROSS_TARGET)

# Size: MinSizeRel (what cross/build-deps builds the dependencies with, and
# scripts/cross and scripts/release build outpost with) puts each function
# and datum in its own section, so that the link's --gc-sections
# (static-deps.cmake) drops what outpost never calls: most of libcurl's,
# mbedTLS's and libarchive's code.
set(CMAKE_C_FLAGS_MINSIZEREL_INIT "-Os -DNDEBUG -ffunction-sections -fdata-sections")

# Tells outpost's CMakeLists.txt to link the static dependency set
# (cross/static-deps.cmake).
set(OUTPOST_STATIC_DEPS ON CACHE BOOL "Link the static dependencies of cross/build-deps")

set(CMAKE_FIND_ROOT_PATH "${OUTPOST_CROSS_PREFIX}" "/usr/${OUTPOST_CROSS_TRIPLE}")
set(CMAKE_PREFIX_PATH "${OUTPOST_CROSS_PREFIX}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config of the build machine would hand out its own -I/-L: point it at
# the prefix only.
set(ENV{PKG_CONFIG_LIBDIR} "${OUTPOST_CROSS_PREFIX}/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
