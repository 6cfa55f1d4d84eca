// GpuBackend's fused optimizer updates: kernels/optimizer.cu.
#include "gpu/gpu_backend.h"
#include "kernels/optimizer.cuh"

namespace convkit::CK_GPU_NS {

void GpuBackend::sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                            SgdStep step) {
  launch_sgd_update(param.dtype(), param.raw_data(), grad.raw_data(),
                    step.momentum != 0 ? momentum_buffer.raw_data() : nullptr, param.numel(), step);
}

void GpuBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                             const Tensor& exp_avg_sq, AdamStep step) {
  launch_adam_update(param.dtype(), param.raw_data(), grad.raw_data(), exp_avg.raw_data(),
                     exp_avg_sq.raw_data(), param.numel(), step);
}

}  // namespace convkit::CK_GPU_NS
