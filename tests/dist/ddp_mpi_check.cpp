// DistributedDataParallel and SyncBatchNorm on the real MPI group, run by
// the ctest entries dist.ddp_mpi.* (tests/dist/CMakeLists.txt):
//   mpirun -np 2 --oversubscribe ddp_mpi_check MODE
// equivalence  2 ranks with batch B/2 reach one rank's weights with batch B
// syncbn       the same with SyncBatchNorm against one rank's BatchNorm
// broadcast    ranks built from different seeds hold rank 0's state
// overlap      buckets go out in order, the first while backward still runs
// Prints "rank R: ok" per rank when every check passed.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <convkit/convkit.h>
#include <convkit/dist/distributed_data_parallel.h>
#include <convkit/dist/process_group.h>
#include <convkit/dist/sync_batchnorm.h>

#include "ddp_test_models.h"
#include "mpi_expect.h"

using namespace convkit;
using namespace convkit::testing;

namespace {

double cap_for_floats(double n) { return n * 4.0 / (1024.0 * 1024.0); }

void check_equivalence(const std::shared_ptr<dist::ProcessGroup>& group, bool sync_batchnorm) {
  const int rank = group->rank(), size = group->size();
  const auto batches = training_batches(4, 8);
  auto reference = small_conv_net(7, sync_batchnorm);
  train_sgd(*reference, batches);  // one rank, the whole batch: no communication
  auto model = small_conv_net(rank == 0 ? 7 : 100 + static_cast<std::uint64_t>(rank), sync_batchnorm);
  if (sync_batchnorm) dist::convert_sync_batchnorm(*model, group);
  dist::DistributedDataParallel ddp(model, group,
                                    dist::DistributedDataParallelOptions().bucket_cap_mb(cap_for_floats(50)));
  std::vector<Batch> mine;
  for (const Batch& b : batches) mine.push_back(shard(b, rank, size));
  train_sgd(ddp, mine);
  const double diff = max_state_difference(*model, *reference);
  std::printf("rank %d: max |weight - one rank's| after 4 steps: %.3g\n", rank, diff);
  expect(diff < 1e-5, rank, "state differs from one rank's by " + std::to_string(diff));
}

void check_broadcast(const std::shared_ptr<dist::ProcessGroup>& group) {
  const int rank = group->rank();
  auto model = small_conv_net(rank == 0 ? 7 : 100 + static_cast<std::uint64_t>(rank), true);
  dist::DistributedDataParallel ddp(model, group);
  const double diff = max_state_difference(*model, *small_conv_net(7, true));
  expect(diff == 0, rank, "state differs from rank 0's by " + std::to_string(diff));
}

// The real group, with every collective this rank issues logged.
class LoggingGroup : public dist::ProcessGroup {
 public:
  LoggingGroup(std::shared_ptr<dist::ProcessGroup> inner, std::vector<std::string>& log)
      : inner_(std::move(inner)), log_(log) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }
  std::shared_ptr<dist::Work> allreduce_sum(Tensor t) override {
    log_.push_back("allreduce " + std::to_string(t.numel()));
    return inner_->allreduce_sum(t);
  }
  std::shared_ptr<dist::Work> broadcast(Tensor t, int root) override {
    log_.push_back("broadcast " + std::to_string(t.numel()));
    return inner_->broadcast(t, root);
  }
  void barrier() override { inner_->barrier(); }

 private:
  std::shared_ptr<dist::ProcessGroup> inner_;
  std::vector<std::string>& log_;
};


void check_overlap(const std::shared_ptr<dist::ProcessGroup>& group) {
  const int rank = group->rank();
  std::vector<std::string> log;
  auto logged = std::make_shared<LoggingGroup>(group, log);
  auto model = small_conv_net(7, false);
  dist::DistributedDataParallel ddp(model, logged,
                                    dist::DistributedDataParallelOptions().bucket_cap_mb(cap_for_floats(300)));
  const Batch b = shard(training_batches(1, 8)[0], rank, group->size());
  const Tensor loss = cross_entropy(ddp(b.x), b.y);
  log.clear();
  LoggingObserver observer(log);
  autograd::set_backward_observer(&observer);
  loss.backward();
  autograd::set_backward_observer(nullptr);
  std::vector<std::size_t> collectives;
  std::size_t last_node = 0;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i].rfind("node", 0) == 0) {
      last_node = i;
    } else {
      collectives.push_back(i);
    }
  }
  expect(collectives.size() == 2, rank, "expected 2 buckets, got " + std::to_string(collectives.size()));
  if (collectives.size() != 2) return;
  expect(log[collectives[0]] == "allreduce 303" && log[collectives[1]] == "allreduce 76", rank,
         "buckets out of order: " + log[collectives[0]] + ", " + log[collectives[1]]);
  expect(collectives[0] < last_node, rank, "the first bucket went out only after backward");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const auto group = dist::world();
  const int rank = group->rank();
  if (group->size() < 2) {
    std::printf("rank %d: needs 2 or more ranks (run under mpirun -np 2)\n", rank);
    return 1;
  }
  if (mode == "equivalence") {
    check_equivalence(group, false);
  } else if (mode == "syncbn") {
    check_equivalence(group, true);
  } else if (mode == "broadcast") {
    check_broadcast(group);
  } else if (mode == "overlap") {
    check_overlap(group);
  } else {
    std::fprintf(stderr, "usage: ddp_mpi_check equivalence|syncbn|broadcast|overlap\n");
    return 2;
  }
  group->barrier();
  if (mpi_failures == 0) std::printf("rank %d: ok\n", rank);
  return mpi_failures == 0 ? 0 : 1;
}
