# cmake -P script: runs PROGRAM under mpirun and checks how the job ended.
#   -DMPIEXEC=  mpirun (empty or missing: the test is skipped)
#   -DNP=2 -DPROGRAM=... -DMODE=...
#   -DEXPECT=pass|fail   the job's exit status: zero, or nonzero
#   -DEXPECT_OUTPUT=...  regexes, joined by "@@", that the combined output must match
#   -DMAX_SECONDS=...    the job must end within this many seconds
if(NOT MPIEXEC OR NOT EXISTS "${MPIEXEC}")
  # ctest's SKIP_REGULAR_EXPRESSION turns this line into a skip.
  message("convkit-mpi-test skipped: mpirun not found (install openmpi-bin)")
  return()
endif()
string(TIMESTAMP start "%s")
# --bind-to none: the ranks share this machine's cores with whatever else runs.
execute_process(COMMAND ${MPIEXEC} -np ${NP} --oversubscribe --bind-to none ${PROGRAM} ${MODE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out
                TIMEOUT ${MAX_SECONDS})
string(TIMESTAMP end "%s")
math(EXPR seconds "${end} - ${start}")
message("${out}")
message("mpi_check ${MODE}: exit ${rc} after ${seconds} s")
if(rc MATCHES "timeout")
  message(FATAL_ERROR "the job did not end within ${MAX_SECONDS} s")
endif()
if(EXPECT STREQUAL "pass" AND NOT rc EQUAL 0)
  message(FATAL_ERROR "the job failed (exit ${rc})")
elseif(EXPECT STREQUAL "fail" AND rc EQUAL 0)
  message(FATAL_ERROR "the job succeeded; it must fail")
endif()
string(REPLACE "@@" ";" regexes "${EXPECT_OUTPUT}")
foreach(regex IN LISTS regexes)
  if(NOT out MATCHES "${regex}")
    message(FATAL_ERROR "the output does not match \"${regex}\"")
  endif()
endforeach()
