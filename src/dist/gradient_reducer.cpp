#include "dist/gradient_reducer.h"

#include "convkit/autograd/grad_mode.h"
#include "convkit/autograd/node.h"
#include "convkit/ops/factory.h"

namespace convkit::dist::detail {

GradientReducer::GradientReducer(std::shared_ptr<ProcessGroup> group, std::vector<Parameter> parameters,
                                 double bucket_cap_bytes)
    : group_(std::move(group)), parameters_(std::move(parameters)) {
  CK_CHECK(group_ != nullptr, "DistributedDataParallel: the process group is null");
  CK_CHECK(bucket_cap_bytes > 0, "DistributedDataParallel: bucket_cap_mb must be positive");
  bucket_of_.resize(parameters_.size());
  // Reverse registration order: roughly the order backward finishes them, so
  // the first bucket fills first. A bucket closes once it reaches the cap, or
  // where the dtype changes (a buffer has one dtype).
  double bucket_bytes = 0;
  for (std::size_t k = parameters_.size(); k-- > 0;) {
    const Tensor& p = parameters_[k].tensor;
    CK_CHECK(p.dtype() == DType::float32 || p.dtype() == DType::float64, "DistributedDataParallel: parameter ",
             parameters_[k].name, " is ", dtype_name(p.dtype()), "; gradients are all-reduced as float32 or float64");
    if (buckets_.empty() || bucket_bytes >= bucket_cap_bytes || buckets_.back().dtype != p.dtype()) {
      buckets_.emplace_back();
      buckets_.back().dtype = p.dtype();
      bucket_bytes = 0;
    }
    Bucket& b = buckets_.back();
    b.parameters.push_back(k);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
    bucket_of_[k] = buckets_.size() - 1;
    bucket_bytes += static_cast<double>(p.numel()) * static_cast<double>(dtype_size(p.dtype()));
  }
  // On the group's device: the cpu for MPI, which stages a sim or cuda
  // model's gradients through it; the model's own device for a device group
  // (NCCL), whose buckets never leave it.
  for (Bucket& b : buckets_)
    b.buffer = Tensor::empty({b.numel}, TensorOptions().dtype(b.dtype).device(group_->device()));
  hooks_.assign(parameters_.size(), 0);
  reset_pass();
}

GradientReducer::~GradientReducer() {
  for (std::size_t k = 0; k < parameters_.size(); ++k)
    if (hooks_[k] != 0) autograd::remove_post_accumulate_grad_hook(parameters_[k].tensor, hooks_[k]);
}

void GradientReducer::attach() {
  const std::weak_ptr<GradientReducer> self = weak_from_this();
  CK_CHECK(!self.expired(), "GradientReducer::attach: the reducer must be owned by a shared_ptr");
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    if (hooks_[k] != 0) continue;
    hooks_[k] = autograd::register_post_accumulate_grad_hook(parameters_[k].tensor, [self, k](const Tensor&) {
      if (const auto reducer = self.lock()) reducer->mark_ready(k);
    });
  }
}

void GradientReducer::reset_pass() {
  ready_.assign(parameters_.size(), false);
  waiting_for_.resize(buckets_.size());
  for (std::size_t b = 0; b < buckets_.size(); ++b) waiting_for_[b] = buckets_[b].parameters.size();
  work_.assign(buckets_.size(), nullptr);
  next_to_issue_ = 0;
  finish_queued_ = false;
}

void GradientReducer::mark_ready(std::size_t parameter) {
  if (!sync_) return;
  if (!finish_queued_) {
    // Holds the reducer until the pass ends, even if the model goes first.
    autograd::queue_callback([self = shared_from_this()] { self->finish(); });
    finish_queued_ = true;
  }
  CK_CHECK(!ready_[parameter], "DistributedDataParallel: parameter ", parameters_[parameter].name,
           " received its gradient twice in one backward pass; each parameter may be accumulated once per pass");
  ready_[parameter] = true;
  if (--waiting_for_[bucket_of_[parameter]] == 0) issue_ready_buckets();
}

void GradientReducer::issue_ready_buckets() {
  while (next_to_issue_ < buckets_.size() && waiting_for_[next_to_issue_] == 0) issue(next_to_issue_++);
}

void GradientReducer::issue(std::size_t index) {
  Bucket& b = buckets_[index];
  for (std::size_t i = 0; i < b.parameters.size(); ++i) {
    const Tensor& p = parameters_[b.parameters[i]].tensor;
    Tensor slot = b.buffer.narrow(0, b.offsets[i], p.numel()).view(p.shape());
    const Tensor grad = p.grad();
    if (grad.defined()) {
      slot.copy_(grad);
    } else {
      slot.zero_();  // unused on this rank this pass: every rank still sends the whole bucket
    }
  }
  work_[index] = group_->allreduce_sum(b.buffer);
}

void GradientReducer::finish() {
  // Whatever happens below, the next pass starts clean.
  struct Reset {
    GradientReducer& r;
    ~Reset() { r.reset_pass(); }
  } reset{*this};
  for (std::size_t b = next_to_issue_; b < buckets_.size(); ++b) issue(b);
  next_to_issue_ = buckets_.size();
  NoGradGuard no_grad;
  const double scale = 1.0 / static_cast<double>(group_->size());
  for (std::size_t index = 0; index < buckets_.size(); ++index) {
    work_[index]->wait();
    Bucket& b = buckets_[index];
    b.buffer.mul_(scale);
    for (std::size_t i = 0; i < b.parameters.size(); ++i) {
      const Tensor& p = parameters_[b.parameters[i]].tensor;
      const Tensor mean = b.buffer.narrow(0, b.offsets[i], p.numel()).view(p.shape());
      Tensor grad = p.grad();
      if (grad.defined()) {
        grad.copy_(mean);
      } else {
        // The buffer is reused next pass: the grad needs its own memory.
        p.set_grad(p.device() == mean.device() ? mean.clone() : mean.to(p.device()));
      }
    }
  }
}

}  // namespace convkit::dist::detail
