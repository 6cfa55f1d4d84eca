# cmake -P script: the Debian packages (cmake/ConvkitPackage.cmake) build, and
# install with dpkg into a private root, where the CLI starts and finds every
# backend; every dependency they declare is a package installed on this
# machine. `dpkg --unpack` installs the files without the maintainer scripts
# (ldconfig), which would otherwise run on this machine rather than in the
# private root; the CLI finds its library by RUNPATH, not by ld.so's cache.
file(REMOVE_RECURSE ${SCRATCH_DIR})
file(MAKE_DIRECTORY ${SCRATCH_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/script_helpers.cmake)

run(cpack --config ${CONVKIT_BUILD_DIR}/CPackConfig.cmake -B ${SCRATCH_DIR})
file(GLOB core_deb ${SCRATCH_DIR}/convkit_*.deb)
file(GLOB cuda_deb ${SCRATCH_DIR}/convkit-cuda_*.deb)
if(NOT core_deb)
  message(FATAL_ERROR "cpack made no convkit_*.deb in ${SCRATCH_DIR}")
endif()

set(root ${SCRATCH_DIR}/root)
set(admin ${root}/var/lib/dpkg)
file(MAKE_DIRECTORY ${admin}/info ${admin}/updates)
file(TOUCH ${admin}/status)
set(dpkg dpkg --instdir=${root} --admindir=${admin} --force-not-root --force-depends)

foreach(deb ${core_deb} ${cuda_deb})
  run(dpkg-deb --field ${deb} Package Depends)
  message(STATUS "${deb}:\n${last_output}")
  # Each declared dependency (alternatives aside) is installed here.
  string(REGEX MATCH "Depends: ([^\n]*)" _ "${last_output}")
  string(REPLACE "," ";" depends "${CMAKE_MATCH_1}")
  foreach(dep ${depends})
    string(REGEX MATCH "^ *([^ |(]+)" _ "${dep}")
    set(name ${CMAKE_MATCH_1})
    if(name STREQUAL "convkit")
      continue()  # the core package, installed first below
    endif()
    run(dpkg-query -W -f=\${Status} ${name})
    expect_match("${last_output}" "install ok installed" "dependency ${name} of ${deb}")
  endforeach()
  run(${dpkg} --unpack ${deb})
endforeach()
run(dpkg-query --admindir=${admin} -W -f=\${Package}\ \${Version}\n)
expect_match("${last_output}" "convkit 0" "dpkg's record of the private root")

set(cli ${root}/usr/bin/convkit)
run(${cli} --version)
run(${cli} devices)
expect_match("${last_output}" "cpu +usable" "CLI from the package")
expect_match("${last_output}" "sim +usable" "CLI from the package")
if(cuda_deb)
  # The plugin is found beside the library; it opens or says why not, but it
  # is never "not in" the folder.
  if(last_output MATCHES "no plugin")
    message(FATAL_ERROR "convkit-cuda is installed but the CLI found no plugin:\n${last_output}")
  endif()
endif()
run(${cli} summary fmnist-cnn)
message(STATUS "${last_output}")
