#include "convkit/nn/dropout.h"

#include <sstream>

#include "convkit/ops/nn_functional.h"

namespace convkit::nn {

Dropout::Dropout(double p) : Module("Dropout"), p_(p) {
  CK_CHECK(p >= 0.0 && p <= 1.0, "Dropout: p must be in [0, 1], got ", p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p_, is_training()); }

std::string Dropout::extra_repr() const {
  std::ostringstream os;
  os << "p=" << p_;
  return os.str();
}

}  // namespace convkit::nn
