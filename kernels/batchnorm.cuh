#pragma once
// Launchers of the batch-norm kernels (kernels/batchnorm.cu), with the
// semantics of Backend::batch_norm_* (include/convkit/backend/backend.h): x is a
// contiguous [N, C, S] device array of `dtype` (float32 or float64), the
// per-channel arrays have C elements, and M = N * S elements make up a channel.
// docs/gpu/batchnorm.md explains the mappings.
#include <cstdint>

#include "convkit/backend/kernel_params.h"
#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

// How the per-channel reductions (statistics, backward sums) meet threads.
enum class BatchNormMapping {
  thread_per_channel,  // v1: a thread walks a channel
  block_per_channel,   // v2 (and v3 when there are enough channels): a block per channel
  split_channels,      // v3: `splits` blocks per channel, then a warp per channel merges their partials
};
const char* mapping_name(BatchNormMapping m);

struct BatchNormPlan {
  int version = 3;
  BatchNormMapping mapping = BatchNormMapping::thread_per_channel;
  unsigned splits = 1;
  // Elements of the dtype for the partials of a split reduction (2 * splits * C), else 0.
  std::int64_t workspace_elements = 0;
};

// The "batch_norm" family's version to run (registers the family on first call).
int batch_norm_kernel_version();
BatchNormPlan plan_batch_norm(std::int64_t N, std::int64_t C, std::int64_t S, int version);

// mean[c] and the biased variance var[c] of channel c (Welford, merged pairwise).
void launch_batch_norm_stats(DType dtype, const void* x, std::int64_t N, std::int64_t C, std::int64_t S, void* mean,
                             void* var, const BatchNormPlan& plan, void* workspace);
// invstd, scale and shift of the C channels from mean, var, weight and bias
// (null: none), and running_mean and running_var (both null, or both not)
// updated in place: Backend::batch_norm_coefficients, one thread per channel.
void launch_batch_norm_coefficients(DType dtype, std::int64_t C, const void* mean, const void* var,
                                    const void* weight, const void* bias, void* running_mean, void* running_var,
                                    BatchNormCoefficientStep step, void* invstd, void* scale, void* shift);
// sum_dy[c] = sum(grad_out), sum_dy_xmu[c] = sum(grad_out * (x - mean[c])).
void launch_batch_norm_backward_reduce(DType dtype, const void* grad_out, const void* x, const void* mean,
                                       std::int64_t N, std::int64_t C, std::int64_t S, void* sum_dy,
                                       void* sum_dy_xmu, const BatchNormPlan& plan, void* workspace);
// out = x * scale[c] + shift[c], or with relu max(0, that). The maps take the
// family's version: 4 runs them 16 bytes at a time where S and the arrays'
// alignment allow, 1 to 3 (and 4 elsewhere) an element at a time, with the
// same bits.
void launch_batch_norm_affine(DType dtype, const void* x, const void* scale, const void* shift, std::int64_t N,
                              std::int64_t C, std::int64_t S, bool relu, void* out, int version);
// out = max(0, x * scale[c] + shift[c] + residual[i]): batch norm, a residual
// add and a ReLU in the one map (batch_norm_add_relu). residual is x's shape.
void launch_batch_norm_add_relu(DType dtype, const void* x, const void* residual, const void* scale,
                                const void* shift, std::int64_t N, std::int64_t C, std::int64_t S, void* out,
                                int version);
// launch_batch_norm_backward_reduce behind a ReLU whose output is `out`: the
// same pass writes grad_masked = out > 0 ? grad_out : 0 and sums grad_masked.
// grad_masked may be grad_out (each element is read, then written, by one thread).
void launch_batch_norm_relu_backward_reduce(DType dtype, const void* grad_out, const void* out, const void* x,
                                            const void* mean, std::int64_t N, std::int64_t C, std::int64_t S,
                                            void* grad_masked, void* sum_dy, void* sum_dy_xmu,
                                            const BatchNormPlan& plan, void* workspace);
// grad_in = weight[c] * invstd[c] * (dy - sum_dy[c] / M - (x - mean[c]) * invstd[c]^2 * sum_dy_xmu[c] / M).
void launch_batch_norm_backward_input(DType dtype, const void* grad_out, const void* x, const void* mean,
                                      const void* invstd, const void* weight, const void* sum_dy,
                                      const void* sum_dy_xmu, std::int64_t N, std::int64_t C, std::int64_t S,
                                      void* grad_in, int version);

}  // namespace convkit::CK_GPU_NS
