# The sim checks (memcheck, racecheck, initcheck: include/convkit/sim/check.h)
# need to see every memory access of a kernel. g++ compiles the sim build of
# each kernel with its kernel-address instrumentation: before each access the
# kernel reads one shadow byte (src/sim/check/shadow.h) and calls the checker
# only when it is non-zero, which it never is while the checks are off. So the
# instrumented kernels cost one load and one predictable branch per access
# when no check runs (docs/sim.md has the measurements). -g1 adds line tables
# only, for the reports' source lines, in builds without -g. ASan builds have their own shadow at the
# same place, so the two exclude each other.
option(CONVKIT_SIM_CHECKS "Instrument the sim build of the kernels for the sim checks" ON)
set(convkit_sim_checks ${CONVKIT_SIM_CHECKS})
if(CONVKIT_SIM_CHECKS AND CONVKIT_SANITIZE)
  message(STATUS "convkit: sim checks off: CONVKIT_SANITIZE builds use AddressSanitizer instead")
  set(convkit_sim_checks OFF)
endif()
# The instrumentation flags below are GCC's (clang has no -fasan-shadow-offset).
if(convkit_sim_checks AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  message(STATUS "convkit: sim checks off: they need GCC's kernel-address instrumentation")
  set(convkit_sim_checks OFF)
endif()

# Where the shadow lives: 16 TiB of address space, reserved (not committed)
# when the library loads, below where Linux places programs and libraries.
set(CONVKIT_SIM_SHADOW_OFFSET 0x100000000000)
set(convkit_sim_check_definitions
    $<$<BOOL:${convkit_sim_checks}>:CONVKIT_SIM_SHADOW_OFFSET=${CONVKIT_SIM_SHADOW_OFFSET}ull>)
set(convkit_sim_check_flags
  -fsanitize=kernel-address -fasan-shadow-offset=${CONVKIT_SIM_SHADOW_OFFSET}
  -fsanitize-recover=kernel-address
  --param=asan-instrumentation-with-call-threshold=1000000  # inline checks, no calls
  --param=asan-stack=1 -fno-sanitize-address-use-after-scope  # redzones around local arrays
  --param=asan-globals=0 --param=asan-use-after-return=0
  $<$<CONFIG:Release,MinSizeRel>:-g1>)  # debug builds keep their full -g

# convkit_sim_kernel_sources(files...): compile CUDA sources (.cu) with g++ for
# the sim backend, instrumented for the sim checks when they are on.
function(convkit_sim_kernel_sources)
  set(options -xc++)
  if(convkit_sim_checks)
    list(APPEND options ${convkit_sim_check_flags})
  endif()
  set_source_files_properties(${ARGN} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "${options}"
                              COMPILE_DEFINITIONS "${convkit_sim_check_definitions}")
endfunction()
