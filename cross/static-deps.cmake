# static-deps.cmake — what outpost's CMakeLists.txt adds when it links the
# static dependency set of cross/build-deps (OUTPOST_STATIC_DEPS, set by the
# toolchain files in this directory). Included after the targets exist; the
# native build never reads this file.
#
#  - The headers of static libcurl, libarchive and cJSON must not declare
#    their functions as DLL imports: CURL_STATICLIB, LIBARCHIVE_STATIC,
#    CJSON_HIDE_SYMBOLS.
#  - FindLibArchive knows nothing of libarchive's own dependencies: zlib, and
#    on Windows CNG (bcrypt). libcurl's CMake config brings its own.
#  - libcurl over the same Mbed TLS (OUTPOST_CURL_MBEDTLS), link-time
#    optimisation, and --gc-sections in size-optimised builds. (Mbed TLS's
#    _ALT hooks are every build's: cmake/mbedtls.cmake.)
#  - Windows: one self-contained .exe (libgcc and the C runtime's extras
#    linked in statically), MinGW's C99 printf (%zu, %lld: msvcrt.dll lacks
#    them), the application manifest (cross/windows/outpost.manifest) and
#    the event log's message table (cross/windows/outpost-events.mc).

find_package(ZLIB REQUIRED)

target_compile_definitions(outpost_agent PUBLIC CURL_STATICLIB LIBARCHIVE_STATIC CJSON_HIDE_SYMBOLS)
set_property(TARGET LibArchive::LibArchive APPEND PROPERTY INTERFACE_LINK_LIBRARIES ZLIB::ZLIB)

if(WIN32)
  set_property(TARGET LibArchive::LibArchive APPEND PROPERTY INTERFACE_LINK_LIBRARIES bcrypt)
  target_compile_definitions(outpost_agent PUBLIC __USE_MINGW_ANSI_STDIO=1)
  # MinGW's C99 printf: %zu and %lld work, and error.h's OUTPOST_PRINTF
  # checks formats against it (__MINGW_PRINTF_FORMAT is gnu_printf then).
  target_link_options(outpost_core PUBLIC -static -static-libgcc)
  # platform/win32/ uses Windows threads; FindThreads' -lpthread would only drag
  # winpthread's emulation into the executable.
  set_property(TARGET Threads::Threads PROPERTY INTERFACE_LINK_LIBRARIES "")
  enable_language(RC)
  set(OUTPOST_MANIFEST "${CMAKE_CURRENT_LIST_DIR}/windows/outpost.manifest")
  # The event log's message table (windows/outpost-events.mc, compiled by
  # windmc): outpost.exe is the EventMessageFile of its event source.
  find_program(OUTPOST_WINDMC NAMES ${OUTPOST_CROSS_TRIPLE}-windmc windmc REQUIRED)
  set(_outpost_mc_dir "${CMAKE_BINARY_DIR}/events")
  set(OUTPOST_MESSAGES "${_outpost_mc_dir}/MSG00409.bin")
  add_custom_command(OUTPUT "${OUTPOST_MESSAGES}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${_outpost_mc_dir}"
    COMMAND ${OUTPOST_WINDMC} -h "${_outpost_mc_dir}" -r "${_outpost_mc_dir}" "${CMAKE_CURRENT_LIST_DIR}/windows/outpost-events.mc"
    DEPENDS "${CMAKE_CURRENT_LIST_DIR}/windows/outpost-events.mc"
    COMMENT "windmc outpost-events.mc")
  configure_file("${CMAKE_CURRENT_LIST_DIR}/windows/outpost.rc.in" "${CMAKE_BINARY_DIR}/outpost.rc" @ONLY)
  set_source_files_properties("${CMAKE_BINARY_DIR}/outpost.rc" PROPERTIES OBJECT_DEPENDS "${OUTPOST_MESSAGES}")
  target_sources(outpost PRIVATE "${CMAKE_BINARY_DIR}/outpost.rc")
endif()

# libcurl in the prefix runs over this Mbed TLS (cross/build-deps): outpost
# may hand it Mbed TLS settings (agent/net/tls.c: the order of the
# key-exchange groups and suites, the TLS session kept between runs).
target_compile_definitions(outpost_agent PUBLIC OUTPOST_CURL_MBEDTLS)

# Link-time optimisation of outpost itself (scripts/release). Fat LTO
# objects: the unit tests and test drivers link the same objects' ordinary
# code, as an LTO link of each of them would cost minutes; the integration
# tests run the LTO-linked program.
option(OUTPOST_LTO "Link outpost with link-time optimisation" OFF)
if(OUTPOST_LTO)
  target_compile_options(outpost_agent PRIVATE -flto=auto -ffat-lto-objects)
  target_compile_options(outpost_core PRIVATE -flto=auto -ffat-lto-objects)
  target_compile_options(outpost PRIVATE -flto=auto)
  target_link_options(outpost PRIVATE -flto=auto)
endif()

# Release artefacts are stripped (scripts/cross and scripts/release copy
# them to out/), and the link drops every section nothing refers to (the
# dependencies and outpost are compiled with -ffunction-sections
# -fdata-sections in MinSizeRel: cross/common.cmake).
# Every dependency is a static archive, so the binaries need no library
# search path; without this CMake writes the dependency prefix's lib/ (the
# imported packages' link directory) into RUNPATH, a path of the build
# machine's cache on every machine the binary runs on.
set_target_properties(outpost PROPERTIES SKIP_BUILD_RPATH ON)

if(CMAKE_BUILD_TYPE STREQUAL "MinSizeRel" OR CMAKE_BUILD_TYPE STREQUAL "Release")
  target_link_options(outpost PRIVATE -s)
  target_link_options(outpost_core INTERFACE -Wl,--gc-sections)
endif()

# The Win32 platform layer's own unit tests (cross/tests/test_platform_win32.c;
# tests/unit/test_platform.c is the POSIX one), registered once the tests
# directory has enabled testing.
if(WIN32 AND OUTPOST_TESTS)
  find_package(cmocka CONFIG REQUIRED)
  add_executable(test_platform_win32 "${CMAKE_CURRENT_LIST_DIR}/tests/test_platform_win32.c")
  target_link_libraries(test_platform_win32 PRIVATE outpost_core ${CMOCKA_LIBRARIES})
  target_include_directories(test_platform_win32 PRIVATE ${CMOCKA_INCLUDE_DIR})
  function(outpost_register_win32_platform_test)
    add_test(NAME unit.test_platform_win32 COMMAND test_platform_win32)
    set_tests_properties(unit.test_platform_win32 PROPERTIES TIMEOUT 120 LABELS unit
      ENVIRONMENT "OUTPOST_TEST_TMP=${CMAKE_BINARY_DIR}/tests/tmp")
  endfunction()
  cmake_language(DEFER CALL outpost_register_win32_platform_test)
endif()
