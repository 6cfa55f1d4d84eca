# Preprocesses a one-line probe, #include "HEADER", with a layer's include
# directories (INCLUDES, one a line) and checks the outcome against EXPECT:
# allow: every include it reaches resolves; forbid: it fails, and for HEADER
# itself being absent. Preprocessing resolves the includes all the way down,
# which is all the layering decides, at a fraction of a compile's time.
foreach(var COMPILER INCLUDES HEADER EXPECT SOURCE_ROOT PROBE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "layering_probe.cmake: -D${var}=... is missing")
  endif()
endforeach()

# A forbidden header that no longer exists anywhere would fail for the wrong
# reason and pass: it must exist where the unlayered build would find it.
set(found FALSE)
foreach(root include src .)
  if(EXISTS ${SOURCE_ROOT}/${root}/${HEADER})
    set(found TRUE)
  endif()
endforeach()
if(NOT found)
  message(FATAL_ERROR "probe header ${HEADER} exists nowhere under ${SOURCE_ROOT} (renamed? update tests/layering)")
endif()

file(STRINGS ${INCLUDES} dirs)
if(NOT dirs)
  message(FATAL_ERROR "${INCLUDES} lists no include directory")
endif()
set(flags "")
foreach(dir IN LISTS dirs)
  list(APPEND flags -I${dir})
endforeach()
file(WRITE ${PROBE} "#include \"${HEADER}\"\n")
execute_process(COMMAND ${COMPILER} -std=c++20 -fopenmp -E -x c++ ${flags} ${PROBE} -o ${PROBE}.i
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "allow")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the layer may include ${HEADER}, but the probe does not preprocess:\n${out}")
  endif()
elseif(EXPECT STREQUAL "forbid")
  if(rc EQUAL 0)
    message(FATAL_ERROR "the layer may not include ${HEADER}, but the probe preprocesses")
  endif()
  # g++ says "HEADER: No such file or directory", clang "'HEADER' file not found".
  string(FIND "${out}" "${HEADER}: No such file or directory" gcc_at)
  string(FIND "${out}" "'${HEADER}' file not found" clang_at)
  if(gcc_at EQUAL -1 AND clang_at EQUAL -1)
    message(FATAL_ERROR "the probe of ${HEADER} failed, but not because the header is hidden:\n${out}")
  endif()
  message(STATUS "refused as expected: ${HEADER} is not found")
else()
  message(FATAL_ERROR "EXPECT must be allow or forbid, got '${EXPECT}'")
endif()
