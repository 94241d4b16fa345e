# man-page.cmake — one man page from its scdoc source, run by the `man`
# target (CMakeLists.txt) as
#   cmake -DSCDOC=... -DGZIP=... -DSRC=x.scd -DOUT=build/man/x.N -DEPOCH=... -P man-page.cmake
# writing OUT and OUT.gz. scdoc dates the page from SOURCE_DATE_EPOCH and
# gzip -n stores no name or time, so the same source gives the same bytes.
set(ENV{SOURCE_DATE_EPOCH} "${EPOCH}")
execute_process(COMMAND "${SCDOC}" INPUT_FILE "${SRC}" OUTPUT_FILE "${OUT}" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  file(REMOVE "${OUT}")
  message(FATAL_ERROR "scdoc ${SRC}: ${err}")
endif()
execute_process(COMMAND "${GZIP}" -9 -n -c "${OUT}" OUTPUT_FILE "${OUT}.gz" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip ${OUT} failed")
endif()
