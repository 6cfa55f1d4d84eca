#include "convkit/optim/sgd.h"

#include <algorithm>

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

namespace {

SgdStep sgd_step(double lr, double weight_decay, const SGDOptions& o) {
  SgdStep step;
  step.lr = lr;
  step.weight_decay = weight_decay;
  step.momentum = o.momentum_;
  step.dampening = o.dampening_;
  step.nesterov = o.nesterov_;
  return step;
}

// Readies a contiguous parameter for the fused kernel: its momentum buffer
// made (first step) or checked and made contiguous. Returns the kernel's
// arguments, the gradient made contiguous.
SgdTensors fused_arguments(const char* op, const Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
                           const SGDOptions& o) {
  bool first_step = false;
  if (o.momentum_ != 0) {
    first_step = !momentum_buffer.defined();
    if (first_step) {
      momentum_buffer = empty_like(param);
    } else {
      detail::prepare_buffer(op, "momentum buffer", param, momentum_buffer);
    }
  }
  return {param, grad.contiguous(), momentum_buffer, first_step};
}

void bump_versions(const SgdTensors& t) {
  t.param.storage()->bump_version();
  if (t.momentum_buffer.defined()) t.momentum_buffer.storage()->bump_version();
}

}  // namespace

void fused_sgd_update(const Tensor& param, const Tensor& grad, Tensor& momentum_buffer, double lr,
                      double weight_decay, const SGDOptions& o) {
  detail::check_param_and_grad("fused_sgd_update", param, grad);
  if (!param.is_contiguous()) {
    sgd_update(param, grad, momentum_buffer, lr, weight_decay, o);
    return;
  }
  const SgdTensors t = fused_arguments("fused_sgd_update", param, grad, momentum_buffer, o);
  if (param.numel() == 0) return;
  SgdStep step = sgd_step(lr, weight_decay, o);
  step.first_step = t.first_step;
  backend_for(param.device()).sgd_update(t.param, t.grad, t.momentum_buffer, step);
  bump_versions(t);
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

void SGD::update_group(const std::vector<PendingUpdate>& updates, const ParamGroup& group) {
  if (!options_.fused_) {
    Optimizer::update_group(updates, group);
    return;
  }
  // One backend call per device and dtype among the group's contiguous
  // parameters (one, in practice); views take the composed path.
  std::vector<std::vector<SgdTensors>> batches;
  for (const PendingUpdate& u : updates) {
    detail::check_param_and_grad("SGD.step", u.param, u.grad);
    if (!u.param.is_contiguous()) {
      update(u.param, u.grad, *u.state, group);
      continue;
    }
    Tensor none;
    Tensor& buffer = options_.momentum_ != 0 ? u.state->slot("momentum_buffer") : none;
    SgdTensors t = fused_arguments("SGD.step", u.param, u.grad, buffer, options_);
    if (u.param.numel() == 0) continue;
    auto same = [&](const std::vector<SgdTensors>& b) {
      return b.front().param.device() == t.param.device() && b.front().param.dtype() == t.param.dtype();
    };
    auto it = std::find_if(batches.begin(), batches.end(), same);
    if (it == batches.end()) it = batches.insert(batches.end(), std::vector<SgdTensors>());
    it->push_back(std::move(t));
  }
  const SgdStep step = sgd_step(*group.lr, *group.weight_decay, options_);
  for (const auto& batch : batches) {
    backend_for(batch.front().param.device()).sgd_update_many(batch, step);
    for (const SgdTensors& t : batch) bump_versions(t);
  }
}

}  // namespace convkit::optim
