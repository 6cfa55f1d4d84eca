#include "convkit/nn/batchnorm.h"

#include <sstream>

#include "convkit/autograd/grad_mode.h"
#include "convkit/nn/init.h"
#include "convkit/ops/factory.h"
#include "convkit/ops/nn_functional.h"

namespace convkit::nn {

BatchNormBase::BatchNormBase(std::string name, const BatchNormOptions& options)
    : Module(std::move(name)), options_(options) {
  const std::int64_t c = options_.num_features_;
  CK_CHECK(c > 0, this->name(), ": num_features must be positive, got ", c);
  CK_CHECK(options_.eps_ > 0, this->name(), ": eps must be positive, got ", options_.eps_);
  CK_CHECK(!options_.momentum_ || (*options_.momentum_ >= 0 && *options_.momentum_ <= 1), this->name(),
           ": momentum must be in [0, 1], got ", options_.momentum_.value_or(0));
  if (options_.affine_) {
    weight = register_parameter("weight", empty({c}));
    bias = register_parameter("bias", empty({c}));
  }
  if (options_.track_running_stats_) {
    running_mean = register_buffer("running_mean", empty({c}));
    running_var = register_buffer("running_var", empty({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", empty({}, DType::int64));
  }
  reset_parameters();
}

void BatchNormBase::reset_running_stats() {
  if (!options_.track_running_stats_) return;
  init::zeros_(running_mean);
  init::ones_(running_var);
  NoGradGuard no_grad;
  num_batches_tracked.zero_();
}

void BatchNormBase::reset_parameters() {
  reset_running_stats();
  if (!options_.affine_) return;
  init::ones_(weight);
  init::zeros_(bias);
}

double BatchNormBase::next_momentum() {
  const std::shared_ptr<Storage> storage = num_batches_tracked.storage();
  CK_CHECK(storage != nullptr, name(), ": num_batches_tracked has no storage");
  const Storage& counter = *storage;
  if (seen_storage_.lock() != storage || counter.version() != seen_version_)
    batches_seen_ = num_batches_tracked.item<std::int64_t>();
  ++batches_seen_;
  {
    NoGradGuard no_grad;
    num_batches_tracked.fill_(static_cast<double>(batches_seen_));
  }
  seen_storage_ = storage;
  seen_version_ = counter.version();
  return options_.momentum_ ? *options_.momentum_ : 1.0 / static_cast<double>(batches_seen_);
}

Tensor BatchNormBase::forward(const Tensor& x) { return normalise(x, false); }

Tensor BatchNormBase::forward_relu(const Tensor& x) { return normalise(x, true); }

Tensor BatchNormBase::forward_add_relu(const Tensor& x, const Tensor& residual) {
  CK_CHECK(residual.defined(), name(), ": the residual is undefined");
  return normalise(x, true, residual);
}

Tensor BatchNormBase::normalise(const Tensor& x, bool relu, const Tensor& residual) {
  CK_CHECK(x.defined(), name(), ": the input is undefined");
  check_input(x);
  CK_CHECK(x.size(1) == options_.num_features_, name(), "(", options_.num_features_,
           "): expected ", options_.num_features_, " channels in dim 1, got shape ", x.shape());
  const bool track = options_.track_running_stats_;
  const double momentum = is_training() && track ? next_momentum() : 0.0;
  const bool use_batch_stats = is_training() || !track;
  // [N, C, L] is normalised as [N, C, L, 1], which batch_norm accepts.
  const Tensor input = x.dim() == 3 ? x.unsqueeze(-1) : x;
  const Tensor rm = track ? running_mean : Tensor(), rv = track ? running_var : Tensor();
  const Tensor res = residual.defined() && x.dim() == 3 ? residual.unsqueeze(-1) : residual;
  Tensor y;
  if (stats_reducer_ && is_training()) {
    y = normalise_synced(input, relu, res, momentum);
  } else if (residual.defined()) {
    y = batch_norm_add_relu(input, res, rm, rv, weight, bias,
                            use_batch_stats, momentum, options_.eps_);
  } else {
    y = (relu ? batch_norm_relu : batch_norm)(input, rm, rv, weight, bias, use_batch_stats, momentum, options_.eps_);
  }
  return x.dim() == 3 ? y.squeeze(-1) : y;
}

std::string BatchNormBase::extra_repr() const {
  std::ostringstream os;
  os << options_.num_features_ << ", eps=" << options_.eps_ << ", momentum=";
  if (options_.momentum_) {
    os << *options_.momentum_;
  } else {
    os << "None";
  }
  os << ", affine=" << (options_.affine_ ? "True" : "False")
     << ", track_running_stats=" << (options_.track_running_stats_ ? "True" : "False");
  return os.str();
}

void BatchNorm1d::check_input(const Tensor& x) const {
  CK_CHECK(x.dim() == 2 || x.dim() == 3, name(), ": expected input [N, C] or [N, C, L], got shape ",
           x.shape());
}

void BatchNorm2d::check_input(const Tensor& x) const {
  CK_CHECK(x.dim() == 4, name(), ": expected input [N, C, H, W], got shape ", x.shape());
}

}  // namespace convkit::nn
