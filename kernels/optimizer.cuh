#pragma once
// Launchers of the fused optimizer updates (kernels/optimizer.cu). Every
// pointer is a contiguous device array of n elements of `dtype`, updated in
// place where it is not const. `version` 0 runs the family's current choice
// (kernel_version("optimizer")); 1 or 2 runs that version and throws Error
// when it cannot run these arguments.
#include <cstdint>

#include "convkit/backend/kernel_params.h"
#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

// Registers the "optimizer" kernel family (idempotent), so that
// set_kernel_version("optimizer", v) works before the first launch.
void register_optimizer_kernels();

// momentum_buffer may be null when step.momentum == 0.
void launch_sgd_update(DType dtype, void* param, const void* grad, void* momentum_buffer, std::int64_t n,
                       const SgdStep& step, int version = 0);
void launch_adam_update(DType dtype, void* param, const void* grad, void* exp_avg, void* exp_avg_sq,
                        std::int64_t n, const AdamStep& step, int version = 0);

}  // namespace convkit::CK_GPU_NS
