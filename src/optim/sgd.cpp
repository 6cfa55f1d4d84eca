#include "convkit/optim/sgd.h"

#include "convkit/ops/elementwise.h"

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

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params), {}, {}}}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& options)
    : Optimizer("SGD", std::move(groups), checked(options).lr_, options.weight_decay_), options_(options) {}

void SGD::update(const Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) {
  if (options_.momentum_ == 0) {
    Tensor none;
    sgd_update(param, grad, none, *group.lr, *group.weight_decay, options_);
    return;
  }
  sgd_update(param, grad, state.slot("momentum_buffer"), *group.lr, *group.weight_decay, options_);
}

}  // namespace convkit::optim
