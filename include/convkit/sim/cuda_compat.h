#pragma once
// The one header every kernel in kernels/*.cu includes. It lets one CUDA source
// compile with two compilers:
//
//   nvcc (__CUDACC__ defined): plain CUDA. <cuda_runtime.h> supplies the
//     built-ins and launch() is a real <<<>>> launch followed by an error check.
//   g++ (the sim backend): every built-in maps onto the CPU emulator in
//     convkit/sim/: CUDA threads become fibers, blocks run on OpenMP threads.
//
// What a kernel author writes, identically for both:
//
//   #include "convkit/sim/cuda_compat.h"
//   namespace convkit::CK_GPU_NS {
//   __global__ void scale(float* x, float a, int n) {
//     const int i = blockIdx.x * blockDim.x + threadIdx.x;
//     if (i < n) x[i] *= a;
//   }
//   void scale_on_device(float* x, float a, int n, cudaStream_t stream) {
//     launch(scale, dim3((n + 255) / 256), dim3(256), 0, stream, x, a, n);
//   }
//   }
//
// Never write <<<>>> or `extern __shared__` in a kernel file; use launch() and
// CK_DYNAMIC_SHARED(float, smem), which declares `float* const smem` pointing at
// the block's dynamic shared memory (more than 48 KB of it only after
// allow_dynamic_shared(kernel, bytes)). Declare static shared arrays as
// `__shared__ SharedArray<float[16][17]> tile;` so the sim checks see them. Use
// CONVKIT_SIM_KERNEL (not __CUDA_ARCH__) to tell the emulator build apart;
// __CUDA_ARCH__ stays undefined under g++.
#include <atomic>
#include <cstddef>
#include <utility>

#include "convkit/backend/kernel_launch.h"
#include "convkit/backend/kernel_versions.h"
#include "convkit/core/error.h"

namespace convkit {
// Why a wgmma kernel cannot run where device_runs_wgmma() (below, for each
// compiler) says no, for the cannot_implement checks that ask it.
inline const char* why_no_wgmma() {
  return wgmma_disabled_by_environment()
             ? "CONVKIT_DISABLE_WGMMA turns the wgmma kernels off"
             : "wgmma needs a compute capability 9.0 GPU running this build's sm_90a code (CMAKE_CUDA_ARCHITECTURES "
               "with 90a; PTX compiled by the driver, as under CUDA_FORCE_PTX_JIT, has no wgmma)";
}
}  // namespace convkit

#if defined(__CUDACC__)
// =================================== nvcc ===================================
#include <cuda_runtime.h>

// Kernels are compiled twice and both copies can end up in one library, so each
// compiler puts them in its own namespace to keep their symbols apart.
#define CK_GPU_NS gpu_cuda

// Dynamic shared memory as a typed pointer. All kernels share one extern array
// of bytes (one name, one type, so nvcc never sees conflicting declarations).
#define CK_DYNAMIC_SHARED(T, name)                                         \
  extern __shared__ __align__(16) unsigned char ck_dynamic_shared_bytes[]; \
  T* const name = reinterpret_cast<T*>(ck_dynamic_shared_bytes)

// Static shared memory: `__shared__ SharedArray<float[16][17]> tile;` is
// `__shared__ float tile[16][17];` (the sim build checks it; shared_array.h).
template <typename Array>
using SharedArray = Array;

// `CK_UNROLL for (...)` asks nvcc to unroll a loop (#pragma unroll); g++
// rejects that pragma under -Werror, so the sim build leaves unrolling to -O3.
#define CK_UNROLL _Pragma("unroll")
// `CK_NO_UNROLL for (...)` keeps a loop rolled (#pragma unroll 1): where
// unrolling would let nvcc hoist the next iterations' loads and run out of
// registers.
#define CK_NO_UNROLL _Pragma("unroll 1")

namespace convkit {

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes,
            cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "launch: the number of arguments does not match the kernel's parameters");
  const detail::KernelLaunch shape{reinterpret_cast<const void*>(kernel),
                                   {grid.x, grid.y, grid.z},
                                   {block.x, block.y, block.z},
                                   shared_bytes};
  // Errors inside the kernel surface at a later synchronizing call, which
  // names this launch if it is still the thread's latest.
  detail::note_launch(shape);
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
  // Catches configuration errors (too many threads, too much shared memory).
  const cudaError_t status = cudaGetLastError();
  CK_CHECK(status == cudaSuccess, detail::describe_launch(shape), ": launch failed: ",
           cudaGetErrorName(status), ": ", cudaGetErrorString(status));
}

// Lets `kernel` take up to `bytes` of dynamic shared memory per block
// (cudaFuncAttributeMaxDynamicSharedMemorySize): above 48 KB a launch is
// refused without this opt-in. Sim keeps the same rule (sim/launch.h).
template <typename... Params>
void allow_dynamic_shared(void (*kernel)(Params...), std::size_t bytes) {
  const cudaError_t status = cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  CK_CHECK(status == cudaSuccess, "allow_dynamic_shared: ", bytes, " B: ", cudaGetErrorName(status), ": ",
           cudaGetErrorString(status));
}

// The most dynamic shared memory a block may opt in to on the current
// device (227 KB on sm_90, 163 KB on sm_80, 99 KB on sm_86 and sm_89), for
// a cannot_implement check; 0 when the device cannot be queried.
inline std::size_t max_dynamic_shared_bytes() {
  int device = 0, bytes = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
    return 0;
  return static_cast<std::size_t>(bytes);
}

namespace detail {

// Sets *ran_sm90a where the code the device runs was compiled for sm_90a,
// the only target whose code holds wgmma (warpgroup_mma.cuh traps on the
// others). A template so that every file may include it.
template <int = 0>
__global__ void sm90a_code_probe(int* ran_sm90a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *ran_sm90a = 1;
#endif
}

// Runs the probe on the current device: 1 it ran sm_90a code, 0 it did not
// (or the build has no code for this device at all), -1 the probe could not
// tell (no memory, a context already broken). Only errors the probe caused
// are cleared: an error the caller has yet to read is not swallowed.
inline int probe_sm90a_code() {
  int* flag = nullptr;
  cudaError_t status = cudaMalloc(&flag, sizeof(int));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // the allocation's own error
    return -1;
  }
  int ran = 0;
  void* args[] = {&flag};
  status = cudaMemset(flag, 0, sizeof(int));
  if (status == cudaSuccess)
    status = cudaLaunchKernel(reinterpret_cast<const void*>(&sm90a_code_probe<0>), dim3(1), dim3(1), args, 0,
                              nullptr);
  if (status == cudaSuccess) status = cudaMemcpy(&ran, flag, sizeof(int), cudaMemcpyDeviceToHost);
  if (status != cudaSuccess) (void)cudaGetLastError();
  (void)cudaFree(flag);
  if (status == cudaErrorNoKernelImageForDevice || status == cudaErrorInvalidDeviceFunction) return 0;
  return status == cudaSuccess ? ran : -1;
}

}  // namespace detail

// Whether kernels that use wgmma (kernels/warpgroup_mma.cuh) may run on the
// current device: whether the device runs this build's sm_90a code, which
// only a compute capability 9.0 GPU (H100, H200) does, and only where the
// build made sm_90a code and the driver was not told to compile PTX instead.
// The compute capability alone cannot say: under CUDA_FORCE_PTX_JIT an H100
// runs the build's PTX (compute_80 by default), where the wgmma kernels trap. So a probe kernel
// asks the code itself, once per device (the first call synchronizes the
// device; not to be first called inside a stream capture).
// CONVKIT_DISABLE_WGMMA=1 says no everywhere (kernel_versions.h).
inline bool device_runs_wgmma() {
  if (wgmma_disabled_by_environment()) return false;
  constexpr int kCachedDevices = 64;
  static std::atomic<signed char> known[kCachedDevices];  // 0 unknown, 1 yes, -1 no
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (device < 0 || device >= kCachedDevices) return detail::probe_sm90a_code() == 1;
  signed char k = known[device].load(std::memory_order_acquire);
  if (k == 0) {
    const int ran = detail::probe_sm90a_code();
    if (ran < 0) return false;  // asked again next time
    k = ran == 1 ? 1 : -1;
    known[device].store(k, std::memory_order_release);
  }
  return k == 1;
}

}  // namespace convkit

#else
// ============================ g++: the sim backend ============================
// Tells shared headers (convkit/core/philox.h) that CUDA qualifiers are
// available, so their functions are callable from kernels.
#define CONVKIT_SIM_KERNEL 1
#define CK_GPU_NS gpu_sim

#include <cmath>
#include <cstdio>

#include "convkit/sim/atomics.h"
#include "convkit/sim/builtin_variables.h"
#include "convkit/sim/intrinsics.h"
#include "convkit/sim/launch.h"
#include "convkit/sim/qualifiers.h"
#include "convkit/sim/runtime.h"
#include "convkit/sim/shared_array.h"
#include "convkit/sim/sync.h"
#include "convkit/sim/vector_types.h"

// CUDA's vector types are global names; see vector_types.h for why the real
// definitions are namespaced.
using convkit::sim::dim3;
using convkit::sim::double2;
using convkit::sim::float2;
using convkit::sim::float3;
using convkit::sim::float4;
using convkit::sim::int2;
using convkit::sim::int3;
using convkit::sim::int4;
using convkit::sim::make_double2;
using convkit::sim::make_float2;
using convkit::sim::make_float3;
using convkit::sim::make_float4;
using convkit::sim::make_int2;
using convkit::sim::make_int3;
using convkit::sim::make_int4;
using convkit::sim::make_uint2;
using convkit::sim::make_uint3;
using convkit::sim::make_uint4;
using convkit::sim::SharedArray;
using convkit::sim::uint2;
using convkit::sim::uint3;
using convkit::sim::uint4;

// The running block's exact-size, 0xFF-poisoned dynamic shared memory.
#define CK_DYNAMIC_SHARED(T, name) \
  T* const name = static_cast<T*>(::convkit::sim::dynamic_shared_memory())
#define CK_UNROLL
#define CK_NO_UNROLL

#endif
