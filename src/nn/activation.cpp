#include "convkit/nn/activation.h"

#include <sstream>
#include <string>

#include "convkit/ops/elementwise.h"
#include "convkit/ops/nn_functional.h"

namespace convkit::nn {

namespace {
std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

LeakyReLU::LeakyReLU(double negative_slope) : Module("LeakyReLU"), negative_slope_(negative_slope) {}
Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, negative_slope_); }
std::string LeakyReLU::extra_repr() const { return "negative_slope=" + number(negative_slope_); }

ELU::ELU(double alpha) : Module("ELU"), alpha_(alpha) {}
Tensor ELU::forward(const Tensor& x) { return elu(x, alpha_); }
std::string ELU::extra_repr() const { return "alpha=" + number(alpha_); }

Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor SiLU::forward(const Tensor& x) { return silu(x); }

Softmax::Softmax(std::int64_t dim) : Module("Softmax"), dim_(dim) {}
Tensor Softmax::forward(const Tensor& x) { return softmax(x, dim_); }
std::string Softmax::extra_repr() const { return "dim=" + std::to_string(dim_); }

LogSoftmax::LogSoftmax(std::int64_t dim) : Module("LogSoftmax"), dim_(dim) {}
Tensor LogSoftmax::forward(const Tensor& x) { return log_softmax(x, dim_); }
std::string LogSoftmax::extra_repr() const { return "dim=" + std::to_string(dim_); }

}  // namespace convkit::nn
