option(CONVKIT_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(CONVKIT_FUZZ "Build the libFuzzer harnesses of tests/fuzz (clang; implies CONVKIT_SANITIZE)" OFF)
if(CONVKIT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CONVKIT_FUZZ needs clang's libFuzzer: configure with CXX=clang++")
  endif()
  # Coverage instrumentation goes where the fuzzed readers and what they build
  # live (src/CMakeLists.txt, convkit_fuzz_coverage_layers), not into the
  # kernels: its comparison callbacks made the sanitizer suite, which shares
  # this build, 3-4 times slower. The harnesses link libFuzzer itself
  # (tests/fuzz/CMakeLists.txt).
  set(convkit_fuzz_coverage_flags -fsanitize=fuzzer-no-link)
  set(CONVKIT_SANITIZE ON)
endif()
# Every convkit target links convkit_warnings; third-party headers are included as SYSTEM.
add_library(convkit_warnings INTERFACE)
target_compile_options(convkit_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic $<$<BOOL:${CONVKIT_WERROR}>:-Werror>>)
# GCC 12's own AVX-512 intrinsic headers trip -Wmaybe-uninitialized on
# _mm512_undefined_*() whenever vectorised code is inlined with
# -march=native on an AVX-512 machine (GCC bug 105593, fixed in GCC 13).
# The warning points into the compiler's headers, never at our code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(convkit_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
  # Under the sanitizers the same false positive surfaces as -Wuninitialized.
  if(CONVKIT_SANITIZE)
    target_compile_options(convkit_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-uninitialized>)
  endif()
endif()

# Clang warns when a loop under `omp simd` is not vectorized, which the
# sanitizers' instrumentation causes; GCC treats the pragma as the hint it is.
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  target_compile_options(convkit_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-pass-failed>)
endif()

if(CONVKIT_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# The library is portable: the cpu kernels are compiled for each x86-64 ISA
# level and chosen at run time (cmake/ConvkitIsa.cmake). CONVKIT_NATIVE
# compiles the rest for the host too; the binary then runs only on CPUs
# with the host's instruction set.
option(CONVKIT_NATIVE "Compile for the host's instruction set (-march=native)" OFF)
if(CONVKIT_NATIVE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()

# GCC 12.2's SLP vectorizer builds some constant initializers wrongly when
# tuning for AVX-512 Intel cores (-march=native on a Sapphire Rapids host):
# std::vector<double>{1, 1, 1, 0} came out as four 1s, a broadcast of the
# first entry. Our kernels vectorize through loops and intrinsics, which this
# leaves alone. tests/core/test_toolchain.cpp checks the fault stays away.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fno-tree-slp-vectorize>)
endif()
