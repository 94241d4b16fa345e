# FindMbedTLS — locates Mbed TLS (2.28 or 3.x), which ships neither a CMake
# config (2.28) nor a pkg-config file on Debian 12.
#
# Sets MbedTLS_FOUND, MbedTLS_VERSION, MbedTLS_INCLUDE_DIR and the imported
# targets MbedTLS::mbedtls, MbedTLS::mbedx509 and MbedTLS::mbedcrypto.
find_path(MbedTLS_INCLUDE_DIR NAMES mbedtls/ssl.h)
find_library(MbedTLS_TLS_LIBRARY NAMES mbedtls)
find_library(MbedTLS_X509_LIBRARY NAMES mbedx509)
find_library(MbedTLS_CRYPTO_LIBRARY NAMES mbedcrypto)

if(MbedTLS_INCLUDE_DIR)
  foreach(_header mbedtls/build_info.h mbedtls/version.h)
    if(EXISTS "${MbedTLS_INCLUDE_DIR}/${_header}")
      file(STRINGS "${MbedTLS_INCLUDE_DIR}/${_header}" _line REGEX "^#define[ \t]+MBEDTLS_VERSION_STRING[ \t]+\"")
      if(_line)
        string(REGEX REPLACE ".*\"([^\"]+)\".*" "\\1" MbedTLS_VERSION "${_line}")
        break()
      endif()
    endif()
  endforeach()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MbedTLS
  REQUIRED_VARS MbedTLS_INCLUDE_DIR MbedTLS_TLS_LIBRARY MbedTLS_X509_LIBRARY MbedTLS_CRYPTO_LIBRARY
  VERSION_VAR MbedTLS_VERSION)

if(MbedTLS_FOUND)
  foreach(_lib crypto x509 tls)
    string(TOUPPER "${_lib}" _upper)
    if(_lib STREQUAL "tls")
      set(_target MbedTLS::mbedtls)
    else()
      set(_target MbedTLS::mbed${_lib})
    endif()
    if(NOT TARGET ${_target})
      add_library(${_target} UNKNOWN IMPORTED)
      set_target_properties(${_target} PROPERTIES
        IMPORTED_LOCATION "${MbedTLS_${_upper}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${MbedTLS_INCLUDE_DIR}")
    endif()
  endforeach()
  set_property(TARGET MbedTLS::mbedx509 APPEND PROPERTY INTERFACE_LINK_LIBRARIES MbedTLS::mbedcrypto)
  set_property(TARGET MbedTLS::mbedtls APPEND PROPERTY INTERFACE_LINK_LIBRARIES MbedTLS::mbedx509)
endif()
mark_as_advanced(MbedTLS_INCLUDE_DIR MbedTLS_TLS_LIBRARY MbedTLS_X509_LIBRARY MbedTLS_CRYPTO_LIBRARY)
