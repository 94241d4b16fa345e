# mbedtls.cmake — one Mbed TLS for every build: 3.6 (LTS), built by
# cross/build-deps from the Debian release's source package, with outpost's
# _ALT hooks. The release and cross builds find it in their target's prefix
# (the toolchain files point find_package there); the development,
# sanitizer and fuzzing builds, which take libcurl, cJSON and libarchive
# from Debian's packages, link the build machine's own (`cross/build-deps
# host`, which scripts/test, scripts/demo and scripts/fuzz run first), never
# Debian 12's libmbedtls-dev 2.28. -DOUTPOST_MBEDTLS_PREFIX=DIR overrides
# where a native build looks.
#
# Sets the targets MbedTLS::mbedtls, MbedTLS::mbedx509, MbedTLS::mbedcrypto
# (Mbed TLS's own CMake package), and outpost_mbedtls_hooks(), which the
# top CMakeLists.txt calls once outpost's targets exist.

if(OUTPOST_STATIC_DEPS)
  find_package(MbedTLS 3.6 CONFIG REQUIRED)
else()
  include("${CMAKE_CURRENT_LIST_DIR}/../cross/cache.cmake")
  # The default is looked up at every configure, not kept in the CMake
  # cache, so that a build directory follows OUTPOST_CROSS_CACHE.
  set(OUTPOST_MBEDTLS_PREFIX "" CACHE PATH "Mbed TLS 3.6 to link (empty: cross/build-deps host's prefix)")
  set(_outpost_mbedtls_prefix "${OUTPOST_MBEDTLS_PREFIX}")
  if(NOT _outpost_mbedtls_prefix)
    outpost_cross_prefix(_outpost_mbedtls_prefix host)
  endif()
  find_package(MbedTLS 3.6 CONFIG PATHS "${_outpost_mbedtls_prefix}" NO_DEFAULT_PATH)
  if(NOT MbedTLS_FOUND)
    message(FATAL_ERROR "Mbed TLS 3.6 is not in ${_outpost_mbedtls_prefix}: run cross/build-deps host "
      "(scripts/test, scripts/demo and scripts/fuzz do), or pass -DOUTPOST_MBEDTLS_PREFIX=DIR")
  endif()
endif()
if(MbedTLS_VERSION VERSION_LESS 3.6 OR MbedTLS_VERSION VERSION_GREATER_EQUAL 4)
  message(FATAL_ERROR "outpost needs Mbed TLS 3.6; found ${MbedTLS_VERSION} (${MbedTLS_DIR})")
endif()

# The _ALT hooks cross/build-deps turns on, each filled by one of outpost's
# modules (agent/crypto/), which is compiled as the hook only when the
# configuration asks for it.
get_target_property(_outpost_mbedtls_include MbedTLS::mbedcrypto INTERFACE_INCLUDE_DIRECTORIES)
foreach(_dir ${_outpost_mbedtls_include})
  if(EXISTS "${_dir}/mbedtls/mbedtls_config.h")
    set(OUTPOST_MBEDTLS_CONFIG "${_dir}/mbedtls/mbedtls_config.h")
  endif()
endforeach()
if(NOT OUTPOST_MBEDTLS_CONFIG)
  message(FATAL_ERROR "Mbed TLS's mbedtls/mbedtls_config.h is not in ${_outpost_mbedtls_include}")
endif()
file(READ "${OUTPOST_MBEDTLS_CONFIG}" _outpost_mbedtls_config)

# One hook: when the configuration sets option, outpost is compiled with
# define, and the linker is told to take symbol from outpost's archive
# (libmbedcrypto.a comes after liboutpost_core.a on the link line: without
# this, nothing has asked for the hook yet when the linker reads outpost's
# archive, and the module stays out). Otherwise Mbed TLS's own code runs,
# and the build says so.
function(outpost_mbedtls_alt option define symbol what)
  if(_outpost_mbedtls_config MATCHES "\n#define ${option}[ \t\r\n]")
    target_compile_definitions(outpost_agent PUBLIC ${define})
    target_link_options(outpost_core INTERFACE "LINKER:--undefined=${symbol}")
  else()
    message(WARNING "${OUTPOST_MBEDTLS_CONFIG} has no ${option}: "
      "${what} runs on Mbed TLS's own code (rebuild it with cross/build-deps)")
  endif()
endfunction()

function(outpost_mbedtls_hooks)
  # SHA-256 blocks: agent/crypto/sha256accel.c (the CPU's SHA instructions).
  outpost_mbedtls_alt(MBEDTLS_SHA256_PROCESS_ALT OUTPOST_SHA256_ALT mbedtls_internal_sha256_process SHA-256)
  # AES-GCM: agent/crypto/gcmaccel.c (AES-NI + PCLMULQDQ, ARMv8 AES + PMULL).
  outpost_mbedtls_alt(MBEDTLS_GCM_ALT OUTPOST_GCM_ALT mbedtls_gcm_auth_decrypt AES-GCM)
endfunction()
