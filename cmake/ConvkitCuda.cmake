# Decides whether the cuda backend is built. CUDA is optional: the CPU-only
# build (cpu + sim backends) must always work.
set(CONVKIT_HAVE_CUDA OFF)
if(CONVKIT_CUDA STREQUAL "ON" OR CONVKIT_CUDA STREQUAL "AUTO")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # sm_80 and sm_90a machine code, and compute_80 PTX for later GPUs to
    # compile. sm_90a, not sm_90: the wgmma kernels (kernels/warpgroup_mma.cuh)
    # exist only there, and its code runs on the same GPUs (H100, H200).
    # compute_80, not compute_90, PTX: outside wgmma the kernels use nothing
    # sm_90 adds, so compute_90's PTX would be the same code for one more nvcc
    # front-end pass per file (19% of the largest file's compile, 69 s to 56).
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90a-real)
    endif()
    enable_language(CUDA)
    # CMake 3.25 predates CUDA 13 and does not know nvcc's C++20 flag.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(CONVKIT_HAVE_CUDA ON)
  elseif(CONVKIT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "CONVKIT_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
message(STATUS "convkit: cuda backend ${CONVKIT_HAVE_CUDA}")

# NCCL, for the cuda plugin's device communicator (docs/distributed.md): AUTO
# links it when nccl.h and libnccl.so are found with the CUDA toolkit, ON
# requires them, OFF leaves it out (the plugin then says so when asked for a
# communicator, and a cuda model under mpirun stages its gradients through
# cpu buffers over MPI).
set(CONVKIT_NCCL "AUTO" CACHE STRING "Link NCCL into the cuda plugin: AUTO (when found), ON or OFF")
set_property(CACHE CONVKIT_NCCL PROPERTY STRINGS AUTO ON OFF)
set(CONVKIT_HAVE_NCCL OFF)
if(CONVKIT_HAVE_CUDA AND NOT CONVKIT_NCCL STREQUAL "OFF")
  find_path(CONVKIT_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(CONVKIT_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(CONVKIT_NCCL_INCLUDE_DIR AND CONVKIT_NCCL_LIBRARY)
    set(CONVKIT_HAVE_NCCL ON)
  endif()
endif()
if(CONVKIT_NCCL STREQUAL "ON" AND NOT CONVKIT_HAVE_NCCL)
  message(FATAL_ERROR "CONVKIT_NCCL=ON but the cuda backend is off or nccl.h / libnccl.so were not found")
endif()
if(CONVKIT_HAVE_NCCL)
  set(CONVKIT_HAVE_NCCL_01 1)
else()
  set(CONVKIT_HAVE_NCCL_01 0)
endif()
message(STATUS "convkit: NCCL in the cuda plugin ${CONVKIT_HAVE_NCCL}")
