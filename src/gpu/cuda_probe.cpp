#include "gpu/cuda_probe.h"

#if defined(CONVKIT_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace convkit::gpu {

namespace {

CudaProbe run_probe() {
  CudaProbe p;
#if defined(CONVKIT_HAVE_CUDA)
  int count = 0;
  // Without a driver every runtime call fails with a sticky error and
  // cudaGetDeviceCount leaves `count` unwritten, hence the initialisation.
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    p.detail = std::string("no usable CUDA device: cudaGetDeviceCount returned ") +
               std::to_string(static_cast<int>(err)) + " (" + cudaGetErrorName(err) + ": " +
               cudaGetErrorString(err) + ")";
    return p;
  }
  if (count == 0) {
    p.detail = "no CUDA device found (cudaGetDeviceCount returned 0)";
    return p;
  }
  p.usable = true;
  p.device_count = count;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    if (!p.detail.empty()) p.detail += "; ";
    p.detail += "cuda:" + std::to_string(i) + " " + prop.name + " (sm_" + std::to_string(prop.major) +
                std::to_string(prop.minor) + ", " +
                std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
  }
#else
  p.detail = "this build has no CUDA support (nvcc was not found, or CONVKIT_CUDA=OFF)";
#endif
  return p;
}

}  // namespace

const CudaProbe& cuda_probe() {
  static const CudaProbe probe = run_probe();
  return probe;
}

}  // namespace convkit::gpu
