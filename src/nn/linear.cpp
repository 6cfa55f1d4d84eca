#include "convkit/nn/linear.h"

#include <sstream>

#include "convkit/ops/factory.h"
#include "convkit/ops/nn_functional.h"

namespace convkit::nn {

Linear::Linear(const LinearOptions& options) : Module("Linear"), options_(options) {
  CK_CHECK(options_.in_features_ > 0 && options_.out_features_ > 0,
           "Linear: features must be positive, got in ", options_.in_features_, ", out ",
           options_.out_features_);
  weight = register_parameter("weight", empty({options_.out_features_, options_.in_features_}));
  if (options_.bias_) bias = register_parameter("bias", empty({options_.out_features_}));
  reset_parameters();
}

void Linear::reset_parameters() { init_layer(options_.init_, weight, bias); }

Tensor Linear::forward(const Tensor& x) {
  CK_CHECK(x.defined(), "Linear(", extra_repr(), "): the input is undefined");
  CK_CHECK(x.dim() >= 1 && x.size(-1) == options_.in_features_, "Linear(", extra_repr(),
           "): expected input [..., ", options_.in_features_, "], got shape ", x.shape());
  return linear(x, weight, bias);
}

std::string Linear::extra_repr() const {
  std::ostringstream os;
  os << "in_features=" << options_.in_features_ << ", out_features=" << options_.out_features_
     << ", bias=" << (options_.bias_ ? "True" : "False");
  return os.str();
}

}  // namespace convkit::nn
