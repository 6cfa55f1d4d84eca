#pragma once
// Data-parallel training across the ranks of a process group, as PyTorch's
// DistributedDataParallel: every rank holds the whole model and trains on its
// own shard of each batch; after each backward every parameter's grad is the
// mean of the ranks' gradients, so identical optimizer steps keep the
// replicas identical.
//
//   auto group = dist::world();
//   auto model = std::make_shared<nn::Sequential>(...);
//   auto ddp = std::make_shared<dist::DistributedDataParallel>(model, group);
//   optim::SGD opt(ddp->parameters(), ...);
//   loss = cross_entropy((*ddp)(x_shard), y_shard);   // per-rank mean
//   loss.backward();                                   // grads: mean over ranks
//   opt.step();
//
// Construction broadcasts every parameter and buffer from rank 0, so the
// replicas start equal whatever each rank's seed. Gradients are all-reduced in
// buckets (docs/distributed.md): each starts as soon as backward has finished
// its parameters, overlapping the rest of backward. With one rank nothing is
// copied or communicated.
//
// What is supported:
// - A parameter unused on some ranks, or in some passes: its rank sends zeros
//   for it, and its grad after backward is the mean over the ranks (defined
//   even where this rank gave none; zeros when no rank used it, so an
//   optimizer with weight decay or momentum still moves it).
// - Gradient accumulation: every backward pass averages the accumulated
//   grads, which gives the right result (the earlier passes' part is already
//   equal on every rank) at one all-reduce per pass; inside NoSync, passes
//   accumulate locally and the first pass after it averages the total.
// - Parameters with requires_grad false at construction are broadcast but get
//   no bucket; changing requires_grad afterwards is not supported.
// - Every rank must run the same backward passes (same graph shape): the
//   buckets are collectives, and the order rule of process_group.h applies.
// - Each parameter may be accumulated once per backward pass.
#include <memory>
#include <string>
#include <vector>

#include "convkit/dist/process_group.h"
#include "convkit/nn/module.h"

namespace convkit::dist {

namespace detail { class GradientReducer; }

struct DistributedDataParallelOptions {
  // Bytes of gradient per all-reduce, in MiB (PyTorch's default 25). Smaller
  // buckets start communicating earlier in backward but pay more latency.
  DistributedDataParallelOptions& bucket_cap_mb(double mb) { bucket_cap_mb_ = mb; return *this; }
  // Broadcast the buffers (BatchNorm's running statistics) from rank 0 before
  // each training-mode forward, as PyTorch does, so every rank evaluates with
  // rank 0's. Off: each rank keeps its own.
  DistributedDataParallelOptions& broadcast_buffers(bool on) { broadcast_buffers_ = on; return *this; }

  double bucket_cap_mb_ = 25;
  bool broadcast_buffers_ = true;
};

class DistributedDataParallel : public nn::Module {
 public:
  // Registers `module` as the child "module" (so parameter names read
  // "module.fc1.weight", as PyTorch's) and broadcasts its state from rank 0:
  // every rank of `group` must construct it at the same point.
  DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group,
                          const DistributedDataParallelOptions& options = {});
  ~DistributedDataParallel() override;

  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  // What forward() does before it runs the module: in training mode, with
  // broadcast_buffers on and several ranks, rank 0's buffers are broadcast.
  // For a caller that runs the module's layers one by one instead of
  // through forward() (fit's layer profiler), so the step stays the same.
  void prepare_forward();

  const std::shared_ptr<nn::Module>& module() const { return module_; }
  const std::shared_ptr<ProcessGroup>& process_group() const { return group_; }
  const DistributedDataParallelOptions& options() const { return options_; }

  // The parameters of each gradient bucket, in the order the buckets are
  // all-reduced (names relative to module()). Empty with one rank.
  std::vector<std::vector<std::string>> bucket_parameter_names() const;

  // While off, backward passes accumulate local gradients and communicate
  // nothing (NoSync sets it for a scope).
  void set_gradient_sync(bool on);
  bool gradient_sync() const;

 private:
  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  DistributedDataParallelOptions options_;
  std::shared_ptr<detail::GradientReducer> reducer_;  // null with one rank
  bool sync_ = true;
};

// PyTorch's no_sync(): backward passes in this scope accumulate local
// gradients only; the first backward after it all-reduces their total.
class NoSync {
 public:
  explicit NoSync(DistributedDataParallel& ddp) : ddp_(ddp), previous_(ddp.gradient_sync()) {
    ddp_.set_gradient_sync(false);
  }
  ~NoSync() { ddp_.set_gradient_sync(previous_); }
  NoSync(const NoSync&) = delete;
  NoSync& operator=(const NoSync&) = delete;

 private:
  DistributedDataParallel& ddp_;
  bool previous_;
};

}  // namespace convkit::dist
