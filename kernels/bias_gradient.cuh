#pragma once
// Launcher of the convolution bias gradient (kernels/bias_gradient.cu), the
// one every GPU conv algorithm calls for db.
#include <cstdint>

#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

// Registers the "bias_gradient" kernel family (idempotent).
void register_bias_gradient_family();

// db[k] = sum over n < N and i < plane of dy[n][k][i] (dy contiguous, N x K x
// plane, float32 or float64), in an order fixed by the version alone, so the
// same inputs give the same bits on every run. `version` 0 runs the family's
// current choice; 1 or 2 that version.
void launch_bias_gradient(DType dtype, const void* dy, std::int64_t N, std::int64_t K, std::int64_t plane, void* db,
                          int version = 0);

}  // namespace convkit::CK_GPU_NS
