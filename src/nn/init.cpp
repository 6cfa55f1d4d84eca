#include "convkit/nn/init.h"

#include <cmath>

#include "convkit/autograd/grad_mode.h"
#include "convkit/ops/factory.h"

namespace convkit::nn {

namespace init {

namespace {

void check_target(const char* op, const Tensor& t) {
  CK_CHECK(t.defined(), "init::", op, ": the tensor is undefined");
  CK_CHECK(is_floating(t.dtype()), "init::", op, ": expected a float32 or float64 tensor, got ",
           t.dtype(), " of shape ", t.shape());
}

// Writes `values` into the handle without recording: initialisation is not
// part of any graph, and parameters are leaves that refuse in-place writes
// under grad mode.
Tensor assign(const Tensor& target, const Tensor& values) {
  NoGradGuard no_grad;
  Tensor t = target;
  t.copy_(values);
  return target;
}

TensorOptions like(const Tensor& t) { return TensorOptions().dtype(t.dtype()).device(t.device()); }

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double negative_slope) {
  switch (nonlinearity) {
    case Nonlinearity::linear:
    case Nonlinearity::conv2d:
    case Nonlinearity::sigmoid: return 1.0;
    case Nonlinearity::tanh: return 5.0 / 3.0;
    case Nonlinearity::relu: return std::sqrt(2.0);
    case Nonlinearity::leaky_relu: return std::sqrt(2.0 / (1.0 + negative_slope * negative_slope));
  }
  CK_FAIL("calculate_gain: unknown nonlinearity");
}

std::pair<std::int64_t, std::int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  CK_CHECK(tensor.defined(), "calculate_fan_in_and_fan_out: the tensor is undefined");
  CK_CHECK(tensor.dim() >= 2, "calculate_fan_in_and_fan_out: needs a tensor with at least 2 dims, got shape ",
           tensor.shape());
  std::int64_t receptive = 1;
  for (std::int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

Tensor zeros_(const Tensor& tensor) { return constant_(tensor, 0.0); }
Tensor ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

Tensor constant_(const Tensor& tensor, double value) {
  check_target("constant_", tensor);
  NoGradGuard no_grad;
  Tensor t = tensor;
  t.fill_(value);
  return tensor;
}

Tensor uniform_(const Tensor& tensor, double lo, double hi) {
  check_target("uniform_", tensor);
  CK_CHECK(lo <= hi, "init::uniform_: lower bound ", lo, " is above upper bound ", hi);
  return assign(tensor, uniform(tensor.shape(), lo, hi, like(tensor)));
}

Tensor normal_(const Tensor& tensor, double mean, double std) {
  check_target("normal_", tensor);
  CK_CHECK(std >= 0, "init::normal_: std must be non-negative, got ", std);
  return assign(tensor, normal(tensor.shape(), mean, std, like(tensor)));
}

namespace {
double kaiming_std(const char* op, const Tensor& t, double a, FanMode mode, Nonlinearity nl) {
  check_target(op, t);
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const std::int64_t fan = mode == FanMode::fan_in ? fan_in : fan_out;
  CK_CHECK(fan > 0, "init::", op, ": zero fan for shape ", t.shape());
  return calculate_gain(nl, a) / std::sqrt(static_cast<double>(fan));
}

double xavier_std(const char* op, const Tensor& t, double gain) {
  check_target(op, t);
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  CK_CHECK(fan_in + fan_out > 0, "init::", op, ": zero fans for shape ", t.shape());
  return gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
}
}  // namespace

Tensor kaiming_uniform_(const Tensor& tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  const double bound = std::sqrt(3.0) * kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity);
  return uniform_(tensor, -bound, bound);
}

Tensor kaiming_normal_(const Tensor& tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  return normal_(tensor, 0.0, kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity));
}

Tensor xavier_uniform_(const Tensor& tensor, double gain) {
  const double bound = std::sqrt(3.0) * xavier_std("xavier_uniform_", tensor, gain);
  return uniform_(tensor, -bound, bound);
}

Tensor xavier_normal_(const Tensor& tensor, double gain) {
  return normal_(tensor, 0.0, xavier_std("xavier_normal_", tensor, gain));
}

}  // namespace init

void init_layer(Init scheme, const Tensor& weight, const Tensor& bias) {
  if (scheme == Init::keras) {
    init::xavier_uniform_(weight);
    if (bias.defined()) init::zeros_(bias);
    return;
  }
  // PyTorch's reset_parameters() for Conv*d and Linear.
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const auto fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

}  // namespace convkit::nn
