#pragma once
// Launchers of the pooling kernels (kernels/pooling.cu). Tensors are
// contiguous NCHW device arrays seen as `planes` = N * C planes of H x W
// inputs and OH x OW outputs; argmax is int64 and indexes within a plane
// (h * W + w). The semantics are the cpu backend's, bit for bit (backend.h).
// `version` 0 runs the family's current choice (kernel_version); an explicit
// version throws Error when it cannot run the given shape.
#include <cstdint>

#include "convkit/backend/kernel_params.h"
#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

struct PoolShape {
  std::int64_t planes = 0;
  std::int64_t H = 0, W = 0, OH = 0, OW = 0;
};

// Registers the "pool2d_forward" and "pool2d_backward" kernel families
// (idempotent), so that set_kernel_version works before the first launch.
void register_pooling_kernels();

// Whether forward v2 (the shared-memory tile) fits this window in shared memory.
bool pool2d_tiled_can_implement(DType dtype, const PoolWindow& window);

void launch_max_pool2d_forward(DType dtype, const void* x, void* out, std::int64_t* argmax,
                               const PoolShape& shape, const PoolWindow& window, int version = 0);
void launch_avg_pool2d_forward(DType dtype, const void* x, void* out, const PoolShape& shape,
                               const PoolWindow& window, int version = 0);
// Both backward passes gather: one thread per input element reads the outputs
// whose windows cover it, in output order, so no two threads write one element
// and the sums come out in the cpu backend's order.
void launch_max_pool2d_backward(DType dtype, const void* grad_out, const std::int64_t* argmax, void* grad_in,
                                const PoolShape& shape, const PoolWindow& window, int version = 0);
void launch_avg_pool2d_backward(DType dtype, const void* grad_out, void* grad_in, const PoolShape& shape,
                                const PoolWindow& window, int version = 0);

}  // namespace convkit::CK_GPU_NS
