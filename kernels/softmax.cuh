#pragma once
// Launchers of the softmax and cross-entropy kernels (kernels/softmax.cu), with
// the semantics of Backend::softmax_forward/backward and
// cross_entropy_forward/backward (include/convkit/backend/backend.h). Every
// pointer is a contiguous device array of `dtype` (float32 or float64) unless
// it says int64. docs/gpu/softmax.md explains the mappings.
#include <cstdint>

#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"
#include "kernels/target_check.cuh"

namespace convkit::CK_GPU_NS {

// How the rows of x viewed as [outer, n, inner] (a row: n elements inner apart) meet threads.
enum class SoftmaxMapping {
  thread_per_row,  // v1 (and v2 when inner > 1): a thread walks a row
  warp_rows,       // v2, inner == 1, n <= 1024: a warp per row
  block_rows,      // v2, inner == 1, n > 1024: a block per row
  columns,         // v2 forward, inner > 1: a thread per row, one online pass
};
const char* mapping_name(SoftmaxMapping m);

// The "softmax" family's version to run (registers the family on first call).
// It covers softmax, log-softmax and cross-entropy.
int softmax_kernel_version();

SoftmaxMapping softmax_forward_mapping(std::int64_t n, std::int64_t inner, int version);
SoftmaxMapping softmax_backward_mapping(std::int64_t n, std::int64_t inner, int version);
// Rows of C logits: thread_per_row (v1), warp_rows or block_rows (v2).
SoftmaxMapping cross_entropy_mapping(std::int64_t classes, int version);

// y = softmax (or log-softmax when `log`) of x along n, x viewed as [outer, n, inner].
void launch_softmax_forward(DType dtype, const void* x, void* y, std::int64_t outer, std::int64_t n,
                            std::int64_t inner, bool log, int version);
// From the forward output y: softmax grad_in = y * (g - sum(g * y)); log-softmax
// grad_in = g - exp(y) * sum(g); sums along n.
void launch_softmax_backward(DType dtype, const void* grad_out, const void* y, void* grad_in, std::int64_t outer,
                             std::int64_t n, std::int64_t inner, bool log, int version);

// Over logits [N, C] and int64 targets [N] in [0, C), with q = (1 - s) * onehot + s / C:
// lse[n] = logsumexp(x[n]), loss[n] = lse[n] - sum_c q[n, c] * x[n, c]. A
// target outside [0, C) gives loss NaN and is recorded in `bad` (when not
// null) for the host to report at its next synchronisation.
void launch_cross_entropy_forward(DType dtype, const void* logits, const std::int64_t* targets, std::int64_t N,
                                  std::int64_t C, double label_smoothing, void* loss, void* lse, int version,
                                  BadTargetRecord* bad = nullptr);
// grad_logits[n, c] = grad_loss[n] * (exp(x[n, c] - lse[n]) - q[n, c]). One version.
void launch_cross_entropy_backward(DType dtype, const void* logits, const std::int64_t* targets, const void* lse,
                                   const void* grad_loss, std::int64_t N, std::int64_t C, double label_smoothing,
                                   void* grad_logits);

}  // namespace convkit::CK_GPU_NS
