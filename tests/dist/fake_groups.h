#pragma once
// Process groups for testing DistributedDataParallel and SyncBatchNorm
// without MPI:
// - MirroredGroup acts as `size` ranks that all hold this rank's values (an
//   all-reduce multiplies by size, a broadcast changes nothing), and records
//   every collective in a log the test can interleave with its own events.
// - ThreadGroups is a real job of N ranks inside one process, each rank a
//   thread with its own model; collectives meet at a rendezvous and sum in
//   rank order, as a blocking MPI collective would.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <convkit/dist/process_group.h>

#include "convkit/core/tensor.h"

namespace convkit::testing {

// A collective that completed when it was issued.
class DoneWork : public dist::Work {
 public:
  void wait() override {}
};

class MirroredGroup : public dist::ProcessGroup {
 public:
  explicit MirroredGroup(int size, std::shared_ptr<std::vector<std::string>> log = nullptr)
      : size_(size), log_(log ? std::move(log) : std::make_shared<std::vector<std::string>>()) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  std::string backend() const override { return "mirrored"; }
  std::shared_ptr<dist::Work> allreduce_sum(Tensor tensor) override;
  std::shared_ptr<dist::Work> broadcast(Tensor tensor, int root) override;
  void barrier() override { log_->push_back("barrier"); }
  // "allreduce N" or "broadcast N" (N elements), one entry per collective.
  const std::shared_ptr<std::vector<std::string>>& log() const { return log_; }

 private:
  int size_;
  std::shared_ptr<std::vector<std::string>> log_;
};

class ThreadGroups {
 public:
  explicit ThreadGroups(int size);
  // The group of one rank; call it from that rank's thread only.
  std::shared_ptr<dist::ProcessGroup> group(int rank);
  // Runs fn(rank) on `size` threads and joins them; rethrows the first error.
  // A rank that fails leaves the others waiting at their next collective,
  // which then gives up after a minute and ends the process, naming it.
  void run(const std::function<void(int rank)>& fn);
  // True when the ranks issued different collectives at the same position.
  bool mismatched() const { return mismatched_; }

 private:
  friend class ThreadRankGroup;
  void meet(int rank, const std::string& kind, const Tensor& tensor, int root);

  int size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::uint64_t generation_ = 0;
  int arrived_ = 0;
  std::string kind_;
  int root_ = 0;
  bool has_tensor_ = false;  // the first rank's, and its shape
  Shape shape_;
  std::vector<Tensor> slots_;
  bool mismatched_ = false;
};

}  // namespace convkit::testing
