# Debian packages, built from the install rules by CPack:
#   cmake --build build/release && cpack --config build/release/CPackConfig.cmake
# gives two packages, so that a machine without CUDA installs no CUDA file:
# - convkit: the library (shared and static), the CLI, headers, CMake config
#   and convkit.pc. Its dependencies come from dpkg-shlibdeps (libgomp1,
#   libpng16-16, libjpeg62-turbo, zlib1g, libstdc++6, ...).
# - convkit-cuda: the cuda plugin, libconvkit_cuda.so, beside libconvkit.so,
#   where the core looks for it (src/backend/plugin_loader.cpp). Its CUDA
#   runtime, cuBLAS and cuFFT come from NVIDIA's toolkit, which Debian does not
#   package under stable names, so they are not declared: without them
#   `convkit devices` says the plugin cannot be loaded and names the library.
# tests/install/run_deb.cmake builds both and installs them with dpkg.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME convkit)
set(CPACK_PACKAGE_VENDOR convkit)
set(CPACK_PACKAGE_CONTACT "convkit maintainers <maintainers@convkit.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_CONVKIT_PACKAGE_NAME convkit)
set(CPACK_DEBIAN_CONVKIT_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_CONVKIT_DESCRIPTION "${PROJECT_DESCRIPTION}\n The library (shared and static), the convkit command-line tool, headers,\n CMake package files and convkit.pc.")
# dpkg-shlibdeps must find libconvkit.so.0 in the package itself, for the CLI.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${PROJECT_BINARY_DIR}/lib")
set(CPACK_COMPONENTS_ALL convkit)
if(TARGET convkit_cuda)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
  set(CPACK_DEBIAN_CUDA_PACKAGE_NAME convkit-cuda)
  set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "convkit (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_CUDA_DESCRIPTION "The cuda backend of convkit\n A plugin that libconvkit opens at run time; it needs the CUDA 13 runtime,\n cuBLAS and cuFFT from the CUDA toolkit, and an NVIDIA driver.")
endif()
include(CPack)
