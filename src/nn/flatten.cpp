#include "convkit/nn/flatten.h"

#include <string>

namespace convkit::nn {

Flatten::Flatten(std::int64_t start_dim, std::int64_t end_dim)
    : Module("Flatten"), start_dim_(start_dim), end_dim_(end_dim) {}

Tensor Flatten::forward(const Tensor& x) {
  CK_CHECK(x.defined(), "Flatten: the input is undefined");
  return x.flatten(start_dim_, end_dim_);
}

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim_) + ", end_dim=" + std::to_string(end_dim_);
}

}  // namespace convkit::nn
