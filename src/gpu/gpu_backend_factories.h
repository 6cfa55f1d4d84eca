#pragma once
// The two builds of GpuBackend, as the registry sees them.
namespace convkit {
class Backend;
namespace gpu_sim { Backend* make_backend(); }
namespace gpu_cuda { Backend* make_backend(); }
}  // namespace convkit
