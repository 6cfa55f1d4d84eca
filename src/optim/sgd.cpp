#include "convkit/optim/sgd.h"

#include "convkit/backend/backend.h"
#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"
#include "optim/fused_checks.h"

namespace convkit::optim {

namespace {
SGDOptions checked(const SGDOptions& o) {
  CK_CHECK(o.lr_ >= 0, "SGD: lr must be non-negative, got ", o.lr_);
  CK_CHECK(o.momentum_ >= 0, "SGD: momentum must be non-negative, got ", o.momentum_);
  CK_CHECK(o.weight_decay_ >= 0, "SGD: weight_decay must be non-negative, got ", o.weight_decay_);
  CK_CHECK(!o.nesterov_ || (o.momentum_ > 0 && o.dampening_ == 0),
           "SGD: nesterov momentum requires momentum > 0 and dampening = 0, got momentum ", o.momentum_,
           ", dampening ", o.dampening_);
  return o;
}
}  // namespace

void sgd_update(const Tensor& param, const Tensor& grad, Tensor& momentum_buffer, double lr,
                double weight_decay, const SGDOptions& o) {
  Tensor d_p = weight_decay != 0 ? add(grad, param, weight_decay) : grad;
  if (o.momentum_ != 0) {
    if (!momentum_buffer.defined()) {
      momentum_buffer = d_p.clone();
    } else {
      momentum_buffer.mul_(o.momentum_).add_(d_p, 1.0 - o.dampening_);
    }
    d_p = o.nesterov_ ? add(d_p, momentum_buffer, o.momentum_) : momentum_buffer;
  }
  Tensor p = param;
  p.add_(d_p, -lr);
}

void fused_sgd_update(const Tensor& param, const Tensor& grad, Tensor& momentum_buffer, double lr,
                      double weight_decay, const SGDOptions& o) {
  detail::check_param_and_grad("fused_sgd_update", param, grad);
  if (!param.is_contiguous()) {
    sgd_update(param, grad, momentum_buffer, lr, weight_decay, o);
    return;
  }
  SgdStep step;
  step.lr = lr;
  step.weight_decay = weight_decay;
  step.momentum = o.momentum_;
  step.dampening = o.dampening_;
  step.nesterov = o.nesterov_;
  if (o.momentum_ != 0) {
    step.first_step = !momentum_buffer.defined();
    if (step.first_step) {
      momentum_buffer = empty_like(param);
    } else {
      detail::prepare_buffer("fused_sgd_update", "momentum buffer", param, momentum_buffer);
    }
  }
  if (param.numel() == 0) return;
  backend_for(param.device()).sgd_update(param, grad.contiguous(), momentum_buffer, step);
  param.storage()->bump_version();
  if (momentum_buffer.defined()) momentum_buffer.storage()->bump_version();
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params), {}, {}}}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& options)
    : Optimizer("SGD", std::move(groups), checked(options).lr_, options.weight_decay_), options_(options) {}

void SGD::update(const Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) {
  const auto rule = options_.fused_ ? fused_sgd_update : sgd_update;
  if (options_.momentum_ == 0) {
    Tensor none;
    rule(param, grad, none, *group.lr, *group.weight_decay, options_);
    return;
  }
  rule(param, grad, state.slot("momentum_buffer"), *group.lr, *group.weight_decay, options_);
}

}  // namespace convkit::optim
