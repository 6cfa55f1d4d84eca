#pragma once
// How a BatchNorm layer shares its batch statistics with the other ranks of a
// data-parallel job (SyncBatchNorm). nn knows no process group: the dist
// layer implements this interface (dist::convert_sync_batchnorm) and sets it
// on each BatchNorm (BatchNormBase::set_stats_reducer).
#include "convkit/core/tensor.h"

namespace convkit::nn {

class BatchStatsReducer {
 public:
  virtual ~BatchStatsReducer() = default;
  // The sum of `stats` (a small tensor of per-channel sums, the same shape on
  // every rank) over the ranks, on stats' device and differentiable: its
  // backward is the same sum of the incoming gradient, since every rank's
  // loss depends on every rank's statistics. Every rank must call it the same
  // number of times in the same order, in forward and in backward.
  virtual Tensor sum_over_ranks(const Tensor& stats) = 0;
};

}  // namespace convkit::nn
