#pragma once
// SyncBatchNorm: BatchNorm whose training-mode statistics cover the batches
// of every rank together, as PyTorch's nn.SyncBatchNorm. By default each rank
// normalises with its own batch's statistics (per-rank BatchNorm); with a
// small per-rank batch those are noisy, and synchronising them makes N ranks
// with batch B/N normalise exactly as one rank with batch B.
//
//   dist::convert_sync_batchnorm(*model, group);   // before wrapping in DDP
//
// Each converted layer costs two all-reduces of [C] values per training
// forward and two in backward, each a wait on every rank (docs/distributed.md).
#include <cstddef>
#include <memory>

#include "convkit/dist/process_group.h"
#include "convkit/nn/batch_stats_reducer.h"
#include "convkit/nn/module.h"

namespace convkit::dist {

// Sums a layer's statistics over the ranks of a group: the tensor is copied
// to the group's device (the cpu for MPI; none for a device group on the
// tensor's own device), all-reduced, and brought back; its backward
// all-reduces the incoming gradient the same way. With one rank it is the
// identity and communicates nothing.
class ProcessGroupStatsReducer : public nn::BatchStatsReducer {
 public:
  explicit ProcessGroupStatsReducer(std::shared_ptr<ProcessGroup> group);
  Tensor sum_over_ranks(const Tensor& stats) override;

 private:
  std::shared_ptr<ProcessGroup> group_;
};

// Makes every BatchNorm1d / BatchNorm2d in `module` (itself included)
// synchronise its statistics over `group`, in place; returns how many layers
// it converted. set_stats_reducer(nullptr) on a layer undoes it.
std::size_t convert_sync_batchnorm(nn::Module& module, std::shared_ptr<ProcessGroup> group);

}  // namespace convkit::dist
