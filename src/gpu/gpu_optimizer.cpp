// GpuBackend's fused optimizer updates: kernels/optimizer.cu.
#include <vector>

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

// One launch for the group (per 64 tensors), under the family's default v3.
void GpuBackend::sgd_update_many(const std::vector<SgdTensors>& tensors, SgdStep step) {
  if (tensors.empty()) return;
  std::vector<OptimizerTensors> table;
  table.reserve(tensors.size());
  for (const SgdTensors& t : tensors) {
    CK_CHECK(t.param.dtype() == tensors.front().param.dtype(), "sgd_update_many: tensors of ",
             tensors.front().param.dtype(), " and ", t.param.dtype(), " in one update");
    table.push_back({t.param.raw_data(), t.grad.raw_data(),
                     step.momentum != 0 ? t.momentum_buffer.raw_data() : nullptr, nullptr, t.param.numel(),
                     t.first_step});
  }
  launch_sgd_update_multi(tensors.front().param.dtype(), table.data(), table.size(), step);
}

void GpuBackend::adam_update_many(const std::vector<AdamTensors>& tensors, AdamStep step) {
  if (tensors.empty()) return;
  std::vector<OptimizerTensors> table;
  table.reserve(tensors.size());
  for (const AdamTensors& t : tensors) {
    CK_CHECK(t.param.dtype() == tensors.front().param.dtype(), "adam_update_many: tensors of ",
             tensors.front().param.dtype(), " and ", t.param.dtype(), " in one update");
    table.push_back({t.param.raw_data(), t.grad.raw_data(), t.exp_avg.raw_data(), t.exp_avg_sq.raw_data(),
                     t.param.numel(), false});
  }
  launch_adam_update_multi(tensors.front().param.dtype(), table.data(), table.size(), step);
}

}  // namespace convkit::CK_GPU_NS
