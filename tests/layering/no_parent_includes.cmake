# Each layer sees only its include tree (cmake/ConvkitLayers.cmake), but a
# quoted include is looked up beside the including file first, so
# #include "../ops/x.h" would walk around it. The library allows none.
file(GLOB_RECURSE files ${SOURCE_ROOT}/src/* ${SOURCE_ROOT}/include/* ${SOURCE_ROOT}/kernels/*)
set(bad "")
foreach(file IN LISTS files)
  if(NOT file MATCHES "\\.(h|cpp|cu|cuh)$")
    continue()
  endif()
  file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]*\\.\\./")
  foreach(line IN LISTS lines)
    file(RELATIVE_PATH rel ${SOURCE_ROOT} ${file})
    string(APPEND bad "\n  ${rel}: ${line}")
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "includes by a relative parent path bypass the layering:${bad}")
endif()
