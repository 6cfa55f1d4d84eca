#pragma once
// Decides, once per process, which CUDA devices can be used (cuda plugin
// only): ask cudaGetDeviceCount once, and never call CUDA again when that
// fails, so a machine without a driver costs nothing after the first answer.
#include <string>
#include <vector>

#include "convkit/backend/backend.h"

namespace convkit::gpu {

struct CudaProbe {
  // One entry per GPU, "cuda:N" with its name, SMs, memory, sm_XY and the
  // driver's version; or one entry "cuda" saying why there is none (no
  // driver, no device).
  std::vector<BackendInfo> devices;
  // Only cuda:0 runs kernels today (the allocator and streams are per process).
  bool usable() const { return !devices.empty() && devices[0].usable; }
};

// Cached after the first call.
const CudaProbe& cuda_probe();

}  // namespace convkit::gpu
