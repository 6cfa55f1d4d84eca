#pragma once
// Weight initialisers, as torch.nn.init. Each fills an existing tensor in
// place (the handle keeps its identity, so it works on registered parameters)
// and returns it. Random ones draw from the Philox generator
// (convkit::manual_seed), so a seed gives the same weights on every device.
//
// Fans follow PyTorch: for a weight of shape [out, in, k...] the receptive
// field is prod(k...), fan_in = in * receptive and fan_out = out * receptive
// (for a grouped conv, `in` is the channels per group, as in the weight).
#include <cstdint>
#include <utility>

#include "convkit/core/tensor.h"

namespace convkit::nn {

// Which framework's default initialisation a Conv2d or Linear uses.
//   pytorch: weight kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
//            bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
//   keras:   weight glorot (xavier) uniform, bias zeros.
enum class Init { pytorch, keras };

namespace init {

enum class FanMode { fan_in, fan_out };
enum class Nonlinearity { linear, conv2d, sigmoid, tanh, relu, leaky_relu };

// torch.nn.init.calculate_gain: 1 for linear/conv/sigmoid, 5/3 for tanh,
// sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu.
double calculate_gain(Nonlinearity nonlinearity, double negative_slope = 0.01);
// {fan_in, fan_out}; needs at least 2 dims.
std::pair<std::int64_t, std::int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor zeros_(const Tensor& tensor);
Tensor ones_(const Tensor& tensor);
Tensor constant_(const Tensor& tensor, double value);
Tensor uniform_(const Tensor& tensor, double lo = 0.0, double hi = 1.0);
Tensor normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0);

// He et al. 2015: std = gain / sqrt(fan), gain = calculate_gain(nonlinearity, a).
// uniform draws from U(-sqrt(3) std, sqrt(3) std). Defaults as PyTorch's.
Tensor kaiming_uniform_(const Tensor& tensor, double a = 0.0, FanMode mode = FanMode::fan_in,
                        Nonlinearity nonlinearity = Nonlinearity::leaky_relu);
Tensor kaiming_normal_(const Tensor& tensor, double a = 0.0, FanMode mode = FanMode::fan_in,
                       Nonlinearity nonlinearity = Nonlinearity::leaky_relu);

// Glorot & Bengio 2010: std = gain * sqrt(2 / (fan_in + fan_out)); uniform
// bound sqrt(3) std = gain * sqrt(6 / (fan_in + fan_out)). Keras calls it glorot.
Tensor xavier_uniform_(const Tensor& tensor, double gain = 1.0);
Tensor xavier_normal_(const Tensor& tensor, double gain = 1.0);
inline Tensor glorot_uniform_(const Tensor& tensor, double gain = 1.0) { return xavier_uniform_(tensor, gain); }
inline Tensor glorot_normal_(const Tensor& tensor, double gain = 1.0) { return xavier_normal_(tensor, gain); }

}  // namespace init

// Initialises a layer's weight (and bias when defined) per `scheme`; fan_in is
// the weight's. Used by Conv2d and Linear, and by user layers that want the same.
void init_layer(Init scheme, const Tensor& weight, const Tensor& bias);

}  // namespace convkit::nn
