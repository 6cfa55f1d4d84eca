#pragma once
// Decides, once per process, whether a CUDA device can be used, following the
// rules in shared/notes/sim-backend.md: link cudart (never libcuda), ask
// cudaGetDeviceCount once, and never call CUDA again when that fails.
#include <string>

namespace convkit::gpu {

struct CudaProbe {
  bool usable = false;
  int device_count = 0;
  std::string detail;  // device names, or why no device can be used
};

// Cached after the first call. Returns "not built with CUDA" in CPU-only builds.
const CudaProbe& cuda_probe();

}  // namespace convkit::gpu
