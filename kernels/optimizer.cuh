#pragma once
// Launchers of the fused optimizer updates (kernels/optimizer.cu). Every
// pointer is a contiguous device array of n elements of `dtype`, updated in
// place where it is not const. `version` 0 runs the family's current choice
// (kernel_version("optimizer")); 1, 2 or 3 runs that version and throws Error
// when it cannot run these arguments.
#include <cstddef>
#include <cstdint>

#include "convkit/backend/kernel_params.h"
#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

// Registers the "optimizer" kernel family (idempotent), so that
// set_kernel_version("optimizer", v) works before the first launch.
void register_optimizer_kernels();

// One tensor of a multi-tensor update: contiguous device arrays of n elements.
// SGD: state0 is the momentum buffer (may be null without momentum) and
// first_step overrides SgdStep::first_step for this tensor; Adam: state0 is
// exp_avg, state1 exp_avg_sq.
struct OptimizerTensors {
  void* param;
  const void* grad;
  void* state0;
  void* state1;
  std::int64_t n;
  bool first_step;
};

// The tensors one v3 launch updates; more take one launch per 64.
inline constexpr std::size_t kMaxTensorsPerLaunch = 64;

// The update of `count` tensors sharing one step's hyper-parameters: v3 (the
// family's default) in one launch per kMaxTensorsPerLaunch tensors, v1 or v2
// one launch per tensor.
void launch_sgd_update_multi(DType dtype, const OptimizerTensors* tensors, std::size_t count, const SgdStep& step,
                             int version = 0);
void launch_adam_update_multi(DType dtype, const OptimizerTensors* tensors, std::size_t count, const AdamStep& step,
                              int version = 0);

// momentum_buffer may be null when step.momentum == 0.
void launch_sgd_update(DType dtype, void* param, const void* grad, void* momentum_buffer, std::int64_t n,
                       const SgdStep& step, int version = 0);
void launch_adam_update(DType dtype, void* param, const void* grad, void* exp_avg, void* exp_avg_sq,
                        std::int64_t n, const AdamStep& step, int version = 0);

}  // namespace convkit::CK_GPU_NS
