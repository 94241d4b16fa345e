# FindcJSON — cJSON installs a CMake config whose `cjson` target carries no
# include directory and no namespace. This wraps it (or, failing that, a plain
# header/library search) as the imported target cJSON::cJSON, included as
# <cjson/cJSON.h>.
find_package(cJSON CONFIG QUIET NO_MODULE)
find_path(cJSON_INCLUDE_DIR NAMES cjson/cJSON.h HINTS ${CJSON_INCLUDE_DIRS})
if(TARGET cjson)
  set(cJSON_LIBRARY cjson)
else()
  find_library(cJSON_LIBRARY NAMES cjson)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(cJSON REQUIRED_VARS cJSON_INCLUDE_DIR cJSON_LIBRARY)

if(cJSON_FOUND AND NOT TARGET cJSON::cJSON)
  add_library(cJSON::cJSON INTERFACE IMPORTED)
  set_target_properties(cJSON::cJSON PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${cJSON_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${cJSON_LIBRARY}")
endif()
mark_as_advanced(cJSON_INCLUDE_DIR cJSON_LIBRARY)
