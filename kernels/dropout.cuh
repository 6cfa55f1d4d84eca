#pragma once
// Launcher of the dropout-mask kernels (kernels/dropout.cu).
#include <cstdint>

#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

// Registers the "dropout" kernel family (idempotent), so that
// set_kernel_version("dropout", v) works before the first launch.
void register_dropout_kernels();

// out[i] (n contiguous float32/float64 elements) = 1 / (1 - p) when
// (word >> 8) >= ceil(p * 2^24), else 0, where word is element offset + i of
// the Philox stream `seed`: bit for bit the cpu backend's mask. `version` 0
// runs the family's current choice; 1..3 that version, throwing Error when it
// cannot run these arguments.
void launch_dropout_mask(DType dtype, void* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                         double p, int version = 0);

}  // namespace convkit::CK_GPU_NS
