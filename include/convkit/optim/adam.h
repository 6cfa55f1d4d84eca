#pragma once
// Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019), exactly as
// torch.optim.Adam / AdamW (see docs/optim.md). At step t:
//   Adam:  g = grad + weight_decay * p          (L2 folded into the gradient)
//   AdamW: p = p * (1 - lr * weight_decay)       (decoupled decay), g = grad
//   m = beta1 m + (1 - beta1) g
//   v = beta2 v + (1 - beta2) g^2
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#include <vector>

#include "convkit/optim/optimizer.h"

namespace convkit::optim {

struct AdamOptions {
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  AdamOptions& lr(double v) { lr_ = v; return *this; }
  AdamOptions& betas(double beta1, double beta2) { beta1_ = beta1; beta2_ = beta2; return *this; }
  AdamOptions& eps(double v) { eps_ = v; return *this; }
  AdamOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  // One fused backend kernel per parameter (fused_adam_update, the default), or
  // the composed reference built from tensor ops (adam_update).
  AdamOptions& fused(bool v = true) { fused_ = v; return *this; }

  double lr_;
  double beta1_ = 0.9;
  double beta2_ = 0.999;
  double eps_ = 1e-8;
  double weight_decay_ = 0.0;
  bool fused_ = true;
};

// The Adam/AdamW rule for one parameter at step `step` (1-based), in place,
// composed of tensor ops: the reference that the fused kernels are checked
// against. `exp_avg` and `exp_avg_sq` are created (zeros) when undefined.
void adam_update(const Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                 std::int64_t step, double lr, double weight_decay, bool decoupled_weight_decay,
                 const AdamOptions& options);
// The same rule as one pass of the backend's fused kernel (Backend::adam_update);
// agrees with adam_update up to the rounding of fused multiply-adds. A
// non-contiguous parameter takes the composed path.
void fused_adam_update(const Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                       std::int64_t step, double lr, double weight_decay, bool decoupled_weight_decay,
                       const AdamOptions& options);

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = AdamOptions());
  Adam(std::vector<ParamGroup> groups, const AdamOptions& options = AdamOptions());
  const AdamOptions& options() const { return options_; }

 protected:
  Adam(const char* name, std::vector<ParamGroup> groups, const AdamOptions& options, bool decoupled);
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void update(const Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) override;
  void update_group(const std::vector<PendingUpdate>& updates, const ParamGroup& group) override;

 private:
  AdamOptions options_;
  bool decoupled_;
};

// Adam with decoupled weight decay. PyTorch's AdamW defaults to
// weight_decay = 1e-2; so does AdamWOptions().
struct AdamWOptions : AdamOptions {
  explicit AdamWOptions(double lr = 1e-3) : AdamOptions(lr) { weight_decay_ = 1e-2; }
};

class AdamW : public Adam {
 public:
  // Takes AdamOptions so chained setters work; AdamWOptions() only changes
  // the default weight decay.
  AdamW(std::vector<Tensor> params, const AdamOptions& options = AdamWOptions());
  AdamW(std::vector<ParamGroup> groups, const AdamOptions& options = AdamWOptions());
};

}  // namespace convkit::optim
