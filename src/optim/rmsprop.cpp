#include "convkit/optim/rmsprop.h"

#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"

namespace convkit::optim {

namespace {
RMSpropOptions checked(const RMSpropOptions& o) {
  CK_CHECK(o.lr_ >= 0, "RMSprop: lr must be non-negative, got ", o.lr_);
  CK_CHECK(o.alpha_ >= 0 && o.alpha_ <= 1, "RMSprop: alpha must be in [0, 1], got ", o.alpha_);
  CK_CHECK(o.eps_ >= 0, "RMSprop: eps must be non-negative, got ", o.eps_);
  CK_CHECK(o.momentum_ >= 0, "RMSprop: momentum must be non-negative, got ", o.momentum_);
  CK_CHECK(o.weight_decay_ >= 0, "RMSprop: weight_decay must be non-negative, got ", o.weight_decay_);
  return o;
}
}  // namespace

void rmsprop_update(const Tensor& param, const Tensor& grad, Tensor& square_avg, Tensor& grad_avg,
                    Tensor& momentum_buffer, double lr, double weight_decay, const RMSpropOptions& o) {
  const Tensor g = weight_decay != 0 ? add(grad, param, weight_decay) : grad;
  if (!square_avg.defined()) square_avg = zeros_like(param);
  square_avg.mul_(o.alpha_).add_(mul(g, g), 1.0 - o.alpha_);
  Tensor avg;
  if (o.centered_) {
    if (!grad_avg.defined()) grad_avg = zeros_like(param);
    grad_avg.mul_(o.alpha_).add_(g, 1.0 - o.alpha_);
    avg = sqrt(sub(square_avg, mul(grad_avg, grad_avg)));
  } else {
    avg = sqrt(square_avg);
  }
  avg.add_(o.eps_);
  Tensor p = param;
  if (o.momentum_ > 0) {
    if (!momentum_buffer.defined()) momentum_buffer = zeros_like(param);
    momentum_buffer.mul_(o.momentum_).add_(div(g, avg));
    p.add_(momentum_buffer, -lr);
  } else {
    p.add_(div(g, avg), -lr);
  }
}

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup{std::move(params), {}, {}}}, options) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& options)
    : Optimizer("RMSprop", std::move(groups), checked(options).lr_, options.weight_decay_), options_(options) {}

void RMSprop::update(const Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) {
  Tensor unused_grad_avg, unused_momentum;
  rmsprop_update(param, grad, state.slot("square_avg"),
                 options_.centered_ ? state.slot("grad_avg") : unused_grad_avg,
                 options_.momentum_ > 0 ? state.slot("momentum_buffer") : unused_momentum, *group.lr,
                 *group.weight_decay, options_);
}

}  // namespace convkit::optim
