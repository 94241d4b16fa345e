# cache.cmake — where cross/build-deps keeps a target's prefix, for CMake:
# the toolchain files (common.cmake) and the native builds' Mbed TLS
# (cmake/mbedtls.cmake) both ask here, so the layout is written once beside
# the script that makes it:
#
#   ${OUTPOST_CROSS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/outpost-cross}/<release>/<target>/prefix
#
# where <release> is the Debian release in cross/debian-release.

# outpost_cross_prefix(VAR TARGET): sets VAR to TARGET's prefix.
function(outpost_cross_prefix var target)
  if(DEFINED ENV{OUTPOST_CROSS_CACHE} AND NOT "$ENV{OUTPOST_CROSS_CACHE}" STREQUAL "")
    set(_cache "$ENV{OUTPOST_CROSS_CACHE}")
  elseif(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(_cache "$ENV{XDG_CACHE_HOME}/outpost-cross")
  else()
    set(_cache "$ENV{HOME}/.cache/outpost-cross")
  endif()
  file(STRINGS "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/debian-release" _release LIMIT_COUNT 1)
  string(STRIP "${_release}" _release)
  set(${var} "${_cache}/${_release}/${target}/prefix" PARENT_SCOPE)
endfunction()
