#include "convkit/optim/adam.h"

#include <algorithm>
#include <cmath>

#include "convkit/backend/backend.h"
#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"
#include "optim/fused_checks.h"

namespace convkit::optim {

namespace {
AdamOptions checked(const char* name, const AdamOptions& o) {
  CK_CHECK(o.lr_ >= 0, name, ": lr must be non-negative, got ", o.lr_);
  CK_CHECK(o.beta1_ >= 0 && o.beta1_ < 1 && o.beta2_ >= 0 && o.beta2_ < 1, name,
           ": betas must be in [0, 1), got (", o.beta1_, ", ", o.beta2_, ")");
  CK_CHECK(o.eps_ >= 0, name, ": eps must be non-negative, got ", o.eps_);
  CK_CHECK(o.weight_decay_ >= 0, name, ": weight_decay must be non-negative, got ", o.weight_decay_);
  return o;
}
}  // namespace

void adam_update(const Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                 std::int64_t step, double lr, double weight_decay, bool decoupled_weight_decay,
                 const AdamOptions& o) {
  Tensor p = param;
  Tensor g = grad;
  if (weight_decay != 0) {
    if (decoupled_weight_decay) {
      p.mul_(1.0 - lr * weight_decay);
    } else {
      g = add(grad, param, weight_decay);
    }
  }
  if (!exp_avg.defined()) exp_avg = zeros_like(param);
  if (!exp_avg_sq.defined()) exp_avg_sq = zeros_like(param);
  exp_avg.mul_(o.beta1_).add_(g, 1.0 - o.beta1_);
  exp_avg_sq.mul_(o.beta2_).add_(mul(g, g), 1.0 - o.beta2_);

  const double t = static_cast<double>(step);
  const double bias_correction1 = 1.0 - std::pow(o.beta1_, t);
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(o.beta2_, t));
  const double step_size = lr / bias_correction1;
  Tensor denom = sqrt(exp_avg_sq) / bias_correction2_sqrt;
  denom.add_(o.eps_);
  p.add_(exp_avg / denom, -step_size);
}

namespace {

AdamStep adam_step(std::int64_t step, double lr, double weight_decay, bool decoupled_weight_decay,
                   const AdamOptions& o) {
  const double t = static_cast<double>(step);
  AdamStep s;
  s.lr = lr;
  s.beta1 = o.beta1_;
  s.beta2 = o.beta2_;
  s.eps = o.eps_;
  s.weight_decay = weight_decay;
  s.decoupled_weight_decay = decoupled_weight_decay;
  s.bias_correction1 = 1.0 - std::pow(o.beta1_, t);
  s.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(o.beta2_, t));
  return s;
}

// Readies a contiguous parameter for the fused kernel: its moments made
// (zeros) or checked and made contiguous; the gradient made contiguous.
AdamTensors fused_arguments(const char* op, const Tensor& param, const Tensor& grad, Tensor& exp_avg,
                            Tensor& exp_avg_sq) {
  for (Tensor* buffer : {&exp_avg, &exp_avg_sq}) {
    if (!buffer->defined()) {
      *buffer = zeros_like(param);
    } else {
      detail::prepare_buffer(op, buffer == &exp_avg ? "exp_avg" : "exp_avg_sq", param, *buffer);
    }
  }
  return {param, grad.contiguous(), exp_avg, exp_avg_sq};
}

void bump_versions(const AdamTensors& t) {
  t.param.storage()->bump_version();
  t.exp_avg.storage()->bump_version();
  t.exp_avg_sq.storage()->bump_version();
}

}  // namespace

void fused_adam_update(const Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                       std::int64_t step, double lr, double weight_decay, bool decoupled_weight_decay,
                       const AdamOptions& o) {
  detail::check_param_and_grad("fused_adam_update", param, grad);
  CK_CHECK(step >= 1, "fused_adam_update: step counts from 1, got ", step);
  if (!param.is_contiguous()) {
    adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, weight_decay, decoupled_weight_decay, o);
    return;
  }
  const AdamTensors t = fused_arguments("fused_adam_update", param, grad, exp_avg, exp_avg_sq);
  if (param.numel() == 0) return;
  backend_for(param.device())
      .adam_update(t.param, t.grad, t.exp_avg, t.exp_avg_sq, adam_step(step, lr, weight_decay, decoupled_weight_decay, o));
  bump_versions(t);
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(std::vector<ParamGroup>{ParamGroup{std::move(params), {}, {}}}, options) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& options)
    : Adam("Adam", std::move(groups), options, false) {}

Adam::Adam(const char* name, std::vector<ParamGroup> groups, const AdamOptions& options, bool decoupled)
    : Optimizer(name, std::move(groups), checked(name, options).lr_, options.weight_decay_),
      options_(options),
      decoupled_(decoupled) {}

void Adam::update(const Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) {
  Tensor& exp_avg = state.slot("exp_avg");
  Tensor& exp_avg_sq = state.slot("exp_avg_sq");
  const auto rule = options_.fused_ ? fused_adam_update : adam_update;
  rule(param, grad, exp_avg, exp_avg_sq, state.step, *group.lr, *group.weight_decay, decoupled_, options_);
}

void Adam::update_group(const std::vector<PendingUpdate>& updates, const ParamGroup& group) {
  if (!options_.fused_) {
    Optimizer::update_group(updates, group);
    return;
  }
  // One backend call per device, dtype and step count (the bias corrections
  // depend on it) among the group's contiguous parameters: one, unless some
  // parameters missed steps. Views take the composed path.
  struct Batch {
    std::int64_t step;
    std::vector<AdamTensors> tensors;
  };
  std::vector<Batch> batches;
  for (const PendingUpdate& u : updates) {
    detail::check_param_and_grad(name().c_str(), u.param, u.grad);
    if (!u.param.is_contiguous()) {
      update(u.param, u.grad, *u.state, group);
      continue;
    }
    AdamTensors t = fused_arguments(name().c_str(), u.param, u.grad, u.state->slot("exp_avg"),
                                    u.state->slot("exp_avg_sq"));
    if (u.param.numel() == 0) continue;
    const std::int64_t step = u.state->step;
    auto same = [&](const Batch& b) {
      return b.step == step && b.tensors.front().param.device() == t.param.device() &&
             b.tensors.front().param.dtype() == t.param.dtype();
    };
    auto it = std::find_if(batches.begin(), batches.end(), same);
    if (it == batches.end()) it = batches.insert(batches.end(), Batch{step, {}});
    it->tensors.push_back(std::move(t));
  }
  for (const Batch& b : batches) {
    backend_for(b.tensors.front().param.device())
        .adam_update_many(b.tensors, adam_step(b.step, *group.lr, *group.weight_decay, decoupled_, options_));
    for (const AdamTensors& t : b.tensors) bump_versions(t);
  }
}

AdamW::AdamW(std::vector<Tensor> params, const AdamOptions& options)
    : AdamW(std::vector<ParamGroup>{ParamGroup{std::move(params), {}, {}}}, options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamOptions& options)
    : Adam("AdamW", std::move(groups), options, true) {}

}  // namespace convkit::optim
