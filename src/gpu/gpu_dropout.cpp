// GpuBackend::dropout_mask: kernels/dropout.cu.
#include "gpu/gpu_backend.h"
#include "kernels/dropout.cuh"

namespace convkit::CK_GPU_NS {

void GpuBackend::dropout_mask(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double p) {
  launch_dropout_mask(out.dtype(), out.raw_data(), out.numel(), seed, offset, p);
}

}  // namespace convkit::CK_GPU_NS
