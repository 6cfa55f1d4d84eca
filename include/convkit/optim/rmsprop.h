#pragma once
// RMSprop (Hinton's lecture 6e), exactly as torch.optim.RMSprop (see docs/optim.md):
//   g = grad + weight_decay * p
//   s = alpha s + (1 - alpha) g^2
//   centered:  a = alpha a + (1 - alpha) g;  d = sqrt(s - a^2) + eps
//   otherwise: d = sqrt(s) + eps
//   momentum > 0: b = momentum b + g / d;  p = p - lr b
//   otherwise:    p = p - lr g / d
#include <vector>

#include "convkit/optim/optimizer.h"

namespace convkit::optim {

struct RMSpropOptions {
  explicit RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  RMSpropOptions& lr(double v) { lr_ = v; return *this; }
  RMSpropOptions& alpha(double v) { alpha_ = v; return *this; }
  RMSpropOptions& eps(double v) { eps_ = v; return *this; }
  RMSpropOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  RMSpropOptions& momentum(double v) { momentum_ = v; return *this; }
  RMSpropOptions& centered(bool v = true) { centered_ = v; return *this; }

  double lr_;
  double alpha_ = 0.99;
  double eps_ = 1e-8;
  double weight_decay_ = 0.0;
  double momentum_ = 0.0;
  bool centered_ = false;
};

// The RMSprop rule for one parameter, in place, and the only place it is
// written (a fused kernel is checked against this). Buffers are created
// (zeros) when undefined; grad_avg is used only when centered and
// momentum_buffer only when momentum > 0.
void rmsprop_update(const Tensor& param, const Tensor& grad, Tensor& square_avg, Tensor& grad_avg,
                    Tensor& momentum_buffer, double lr, double weight_decay, const RMSpropOptions& options);

class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = RMSpropOptions());
  RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& options = RMSpropOptions());
  const RMSpropOptions& options() const { return options_; }

 protected:
  std::vector<std::string> state_names() const override {
    return {"square_avg", "grad_avg", "momentum_buffer"};
  }
  void update(const Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) override;

 private:
  RMSpropOptions options_;
};

}  // namespace convkit::optim
