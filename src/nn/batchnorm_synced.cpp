// SyncBatchNorm's training step: batch statistics over every rank's batch.
//
// Two reductions, each a sum over the ranks of a [C]-sized tensor: first the
// per-channel sums (and the count) for the global mean, then the sums of
// squared deviations from that mean for the global variance. One reduction of
// sum(x) and sum(x^2) would save a round trip but loses the variance to
// cancellation in float32 when |mean| >> std; two keep SyncBatchNorm as
// accurate as BatchNorm, which the equivalence tests compare it with.
//
// Built from differentiable ops, so autograd derives the backward; the
// reducer's backward sums the statistics' gradients over the ranks, which is
// where each rank's loss reaches the other ranks' inputs.
#include <vector>

#include "convkit/autograd/grad_mode.h"
#include "convkit/nn/batchnorm.h"
#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"
#include "convkit/ops/nn_functional.h"
#include "convkit/ops/reduce.h"

namespace convkit::nn {

Tensor BatchNormBase::normalise_synced(const Tensor& x, bool relu, const Tensor& residual, double momentum) {
  const std::int64_t C = x.size(1);
  std::vector<std::int64_t> reduce_dims{0};
  std::vector<std::int64_t> channel_shape(static_cast<std::size_t>(x.dim()), 1);
  channel_shape[1] = C;
  for (std::int64_t d = 2; d < x.dim(); ++d) reduce_dims.push_back(d);
  const Shape per_channel(channel_shape);
  const TensorOptions opts = TensorOptions().dtype(x.dtype()).device(x.device());

  const double local_count = static_cast<double>(C == 0 ? 0 : x.numel() / C);
  const Tensor sums = stats_reducer_->sum_over_ranks(cat({sum(x, reduce_dims), full({1}, local_count, opts)}, 0));
  const double count = sums.narrow(0, C, 1).item();
  CK_CHECK(count > 1, name(), ": training with statistics synchronised over the ranks needs more than 1 value ",
           "per channel over all ranks, got ", count, " (this rank's input has shape ", x.shape(), ")");
  const Tensor mean = sums.narrow(0, 0, C) / count;
  const Tensor centered = x - mean.view(per_channel);
  const Tensor var = stats_reducer_->sum_over_ranks(sum(centered * centered, reduce_dims)) / count;
  Tensor y = centered * (1.0 / sqrt(var + options_.eps_)).view(per_channel);
  if (weight.defined()) y = y * weight.view(per_channel) + bias.view(per_channel);
  if (residual.defined()) y = y + residual;
  if (relu) y = convkit::relu(y);

  if (options_.track_running_stats_) {
    NoGradGuard no_grad;
    // As batch_norm: the running variance is the unbiased one, here over the
    // global batch.
    running_mean.mul_(1 - momentum).add_(mean.detach(), momentum);
    running_var.mul_(1 - momentum).add_(var.detach(), momentum * count / (count - 1));
  }
  return y;
}

}  // namespace convkit::nn
