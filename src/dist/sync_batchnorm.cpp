#include "convkit/dist/sync_batchnorm.h"

#include <vector>

#include "convkit/autograd/node.h"
#include "convkit/nn/batchnorm.h"

namespace convkit::dist {

namespace {

// A new tensor holding the sum over the ranks of `t`'s values.
Tensor allreduced_copy(ProcessGroup& group, const Tensor& t) {
  // The group writes its tensor in place, and t may be saved for backward or
  // shared: always reduce a copy of our own, on the group's device (the cpu
  // for MPI, the GPU itself for a device group).
  const Device comm_device = group.device();
  Tensor staged = t.device() == comm_device ? t.detach().contiguous().clone()
                                            : t.detach().to(comm_device).contiguous();
  group.allreduce_sum(staged)->wait();
  return staged.to(t.device());
}

}  // namespace

ProcessGroupStatsReducer::ProcessGroupStatsReducer(std::shared_ptr<ProcessGroup> group) : group_(std::move(group)) {
  CK_CHECK(group_ != nullptr, "SyncBatchNorm: the process group is null");
}

Tensor ProcessGroupStatsReducer::sum_over_ranks(const Tensor& stats) {
  CK_CHECK(stats.dtype() == DType::float32 || stats.dtype() == DType::float64,
           "SyncBatchNorm: statistics must be float32 or float64, got ", dtype_name(stats.dtype()));
  if (group_->size() == 1) return stats;
  Tensor out = allreduced_copy(*group_, stats);
  return autograd::record(out, "AllreduceSumBackward", {stats}, [group = group_](const Tensor& g) {
    return std::vector<Tensor>{allreduced_copy(*group, g)};
  });
}

std::size_t convert_sync_batchnorm(nn::Module& module, std::shared_ptr<ProcessGroup> group) {
  const auto reducer = std::make_shared<ProcessGroupStatsReducer>(std::move(group));
  std::size_t converted = 0;
  module.apply([&](nn::Module& m) {
    if (auto* bn = dynamic_cast<nn::BatchNormBase*>(&m)) {
      bn->set_stats_reducer(reducer);
      ++converted;
    }
  });
  return converted;
}

}  // namespace convkit::dist
