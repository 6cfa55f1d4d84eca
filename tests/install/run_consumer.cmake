# cmake -P script: install into a scratch prefix, then
# 1. the core needs no CUDA: libconvkit.so links no CUDA library, and a
#    consumer configures with find_package(CUDAToolkit) disabled;
# 2. the consumer builds against the installed tree and runs (shared, static);
# 3. the installed CLI starts from its prefix and lists every backend: as
#    installed, with the cuda plugin removed, and with the CUDA runtime out of
#    the library path (ld.so --inhibit-cache drops /etc/ld.so.cache, where the
#    toolkit's libraries are registered).
file(REMOVE_RECURSE ${SCRATCH_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/script_helpers.cmake)

set(prefix ${SCRATCH_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${CONVKIT_BUILD_DIR} --prefix ${prefix})
file(GLOB core_library ${prefix}/lib*/libconvkit.so.*.*)
file(GLOB plugin ${prefix}/lib*/libconvkit_cuda.so)

run(readelf -d ${core_library})
if(last_output MATCHES "NEEDED[^\n]*(libcud|libcublas|libcufft)")
  message(FATAL_ERROR "libconvkit.so links a CUDA library:\n${last_output}")
endif()

foreach(variant shared static)
  run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${SCRATCH_DIR}/build-${variant}
      -G ${CMAKE_GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCONSUMER_VARIANT=${variant}
      -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON)
  run(${CMAKE_COMMAND} --build ${SCRATCH_DIR}/build-${variant})
  run(${SCRATCH_DIR}/build-${variant}/consumer)
  expect_match("${last_output}" "consumer ok: grad = 12" "consumer (${variant})")
  expect_match("${last_output}" "backends: cpu usable, sim usable, cuda" "consumer (${variant})")
  message(STATUS "${variant}: ${last_output}")
endforeach()

# A consumer with no CMake: the compiler line comes from convkit.pc.
find_program(pkg_config NAMES pkg-config pkgconf REQUIRED)
file(GLOB pc_dir ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
run(${pkg_config} --cflags --libs convkit)
string(STRIP "${last_output}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
file(GLOB lib_dir LIST_DIRECTORIES true ${prefix}/lib*)
find_program(cxx NAMES c++ g++ REQUIRED)
run(${cxx} ${CONSUMER_SOURCE_DIR}/main.cpp ${pc_flags} -Wl,-rpath,${lib_dir} -o ${SCRATCH_DIR}/consumer-pkg-config)
run(${SCRATCH_DIR}/consumer-pkg-config)
expect_match("${last_output}" "consumer ok: grad = 12" "consumer (pkg-config)")
message(STATUS "pkg-config (${pc_flags}): ${last_output}")

set(cli ${prefix}/bin/convkit)
run(${cli} devices)
expect_match("${last_output}" "cpu +usable" "installed CLI")
expect_match("${last_output}" "sim +usable" "installed CLI")
expect_match("${last_output}" "\ncuda" "installed CLI")
message(STATUS "installed: ${last_output}")
if(NOT plugin)
  expect_match("${last_output}" "cuda +not usable +no plugin: libconvkit_cuda.so is not in" "CPU-only install")
else()
  # The same install without its plugin.
  file(COPY ${prefix}/ DESTINATION ${SCRATCH_DIR}/no-plugin)
  file(GLOB copied_plugin ${SCRATCH_DIR}/no-plugin/lib*/libconvkit_cuda.so)
  file(REMOVE ${copied_plugin})
  run(${SCRATCH_DIR}/no-plugin/bin/convkit devices)
  expect_match("${last_output}" "cuda +not usable +no plugin: libconvkit_cuda.so is not in" "install without plugin")
  message(STATUS "without the plugin: ${last_output}")
  # The plugin present, the CUDA runtime not found. Where the runtime sits in
  # a default folder of the loader, no cache is needed to find it, and its
  # absence cannot be simulated this way: the CLI must still start.
  set(ld_so /lib64/ld-linux-x86-64.so.2)
  execute_process(COMMAND ${ld_so} --inhibit-cache --list ${plugin} OUTPUT_VARIABLE deps ERROR_VARIABLE deps)
  run(${ld_so} --inhibit-cache ${cli} devices)
  if(deps MATCHES "libcudart[^\n]*(not found|cannot open)")
    expect_match("${last_output}" "cuda +not usable +plugin [^\n]*libconvkit_cuda.so cannot be loaded[^\n]*libcu"
                 "install without the CUDA runtime")
    message(STATUS "without the CUDA runtime: ${last_output}")
  else()
    message(STATUS "the CUDA runtime is found without /etc/ld.so.cache here; its absence is not simulated:\n${deps}")
  endif()
  run(${ld_so} --inhibit-cache ${cli} summary fmnist-cnn)
endif()
