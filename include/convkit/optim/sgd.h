#pragma once
// Stochastic gradient descent with momentum, dampening, Nesterov momentum and
// L2 weight decay, exactly as torch.optim.SGD (see docs/optim.md):
//   g = grad + weight_decay * p
//   b = g                                   (first step)
//   b = momentum * b + (1 - dampening) * g  (later steps)
//   g = g + momentum * b  (nesterov)   or   g = b
//   p = p - lr * g
// (without momentum, p = p - lr * g with no buffer kept.)
#include <vector>

#include "convkit/optim/optimizer.h"

namespace convkit::optim {

struct SGDOptions {
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& lr(double v) { lr_ = v; return *this; }
  SGDOptions& momentum(double v) { momentum_ = v; return *this; }
  SGDOptions& dampening(double v) { dampening_ = v; return *this; }
  SGDOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  SGDOptions& nesterov(bool v = true) { nesterov_ = v; return *this; }
  // One fused backend kernel per parameter (fused_sgd_update, the default), or
  // the composed reference built from tensor ops (sgd_update).
  SGDOptions& fused(bool v = true) { fused_ = v; return *this; }

  double lr_;
  double momentum_ = 0.0;
  double dampening_ = 0.0;
  double weight_decay_ = 0.0;
  bool nesterov_ = false;
  bool fused_ = true;
};

// The SGD rule for one parameter, in place, composed of tensor ops: the
// reference that the fused kernels are checked against. `momentum_buffer` is
// created on the first call when momentum is on.
void sgd_update(const Tensor& param, const Tensor& grad, Tensor& momentum_buffer, double lr,
                double weight_decay, const SGDOptions& options);
// The same rule as one pass of the backend's fused kernel (Backend::sgd_update);
// agrees with sgd_update up to the rounding of fused multiply-adds. A
// non-contiguous parameter takes the composed path.
void fused_sgd_update(const Tensor& param, const Tensor& grad, Tensor& momentum_buffer, double lr,
                      double weight_decay, const SGDOptions& options);

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  SGD(std::vector<ParamGroup> groups, const SGDOptions& options);
  const SGDOptions& options() const { return options_; }

 protected:
  std::vector<std::string> state_names() const override { return {"momentum_buffer"}; }
  void update(const Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) override;
  void update_group(const std::vector<PendingUpdate>& updates, const ParamGroup& group) override;

 private:
  SGDOptions options_;
};

}  // namespace convkit::optim
