#pragma once
// The two kinds of Work: one already complete (the one-rank group has
// nothing to wait for) and one that the group's thread completes.
#include <condition_variable>
#include <mutex>

#include "convkit/dist/process_group.h"

namespace convkit::dist {

class CompletedWork final : public Work {
 public:
  void wait() override {}
};

class PendingWork final : public Work {
 public:
  // Holds the tensor so that the group's thread may write it however early
  // the caller drops its own handle.
  explicit PendingWork(Tensor tensor) : tensor_(std::move(tensor)) {}
  const Tensor& tensor() const { return tensor_; }

  void wait() override {
    std::unique_lock lock(mutex_);
    done_changed_.wait(lock, [this] { return done_; });
  }
  // The group's thread: the collective completed on this rank.
  void complete() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_changed_.notify_all();
  }

 private:
  Tensor tensor_;
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
};

}  // namespace convkit::dist
