#include "fake_groups.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "convkit/autograd/grad_mode.h"

namespace convkit::testing {

std::shared_ptr<dist::Work> MirroredGroup::allreduce_sum(Tensor tensor) {
  log_->push_back("allreduce " + std::to_string(tensor.numel()));
  NoGradGuard no_grad;
  tensor.mul_(static_cast<double>(size_));
  return std::make_shared<DoneWork>();
}

std::shared_ptr<dist::Work> MirroredGroup::broadcast(Tensor tensor, int) {
  log_->push_back("broadcast " + std::to_string(tensor.numel()));
  return std::make_shared<DoneWork>();
}

class ThreadRankGroup : public dist::ProcessGroup {
 public:
  ThreadRankGroup(ThreadGroups& groups, int rank) : groups_(groups), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return groups_.size_; }
  std::string backend() const override { return "threads"; }
  std::shared_ptr<dist::Work> allreduce_sum(Tensor tensor) override {
    groups_.meet(rank_, "allreduce", tensor, 0);
    return std::make_shared<DoneWork>();
  }
  std::shared_ptr<dist::Work> broadcast(Tensor tensor, int root) override {
    groups_.meet(rank_, "broadcast", tensor, root);
    return std::make_shared<DoneWork>();
  }
  void barrier() override { groups_.meet(rank_, "barrier", Tensor(), 0); }

 private:
  ThreadGroups& groups_;
  int rank_;
};

ThreadGroups::ThreadGroups(int size) : size_(size), slots_(static_cast<std::size_t>(size)) {}

std::shared_ptr<dist::ProcessGroup> ThreadGroups::group(int rank) {
  return std::make_shared<ThreadRankGroup>(*this, rank);
}

void ThreadGroups::meet(int rank, const std::string& kind, const Tensor& tensor, int root) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (arrived_ == 0) {
    kind_ = kind;
    root_ = root;
    has_tensor_ = tensor.defined();
    if (has_tensor_) shape_ = tensor.shape();
  } else if (kind != kind_ || root != root_ || tensor.defined() != has_tensor_ ||
             (has_tensor_ && tensor.shape() != shape_)) {
    mismatched_ = true;
  }
  slots_[static_cast<std::size_t>(rank)] = tensor;
  const std::uint64_t generation = generation_;
  if (++arrived_ == size_) {
    if (kind_ != "barrier" && !mismatched_) {
      NoGradGuard no_grad;
      if (kind_ == "allreduce") {
        Tensor total = slots_[0].clone();
        for (int r = 1; r < size_; ++r) total.add_(slots_[static_cast<std::size_t>(r)]);
        for (Tensor& t : slots_) t.copy_(total);
      } else {
        const Tensor source = slots_[static_cast<std::size_t>(root_)].clone();
        for (Tensor& t : slots_) t.copy_(source);
      }
    }
    for (Tensor& t : slots_) t = Tensor();
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  if (!cv_.wait_for(lock, std::chrono::seconds(60), [&] { return generation_ != generation; })) {
    std::fprintf(stderr, "ThreadGroups: rank %d waited a minute for the others at a %s\n", rank, kind.c_str());
    std::abort();
  }
}

void ThreadGroups::run(const std::function<void(int rank)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(size_));
  std::vector<std::thread> threads;
  for (int r = 0; r < size_; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace convkit::testing
