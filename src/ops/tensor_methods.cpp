// Tensor's math members forward to the free functions of convkit/ops.
#include "convkit/core/tensor.h"
#include "convkit/ops/elementwise.h"
#include "convkit/ops/linalg.h"
#include "convkit/ops/reduce.h"

namespace convkit {

Tensor Tensor::sum(const std::vector<std::int64_t>& d, bool k) const { return convkit::sum(*this, d, k); }
Tensor Tensor::mean(const std::vector<std::int64_t>& d, bool k) const { return convkit::mean(*this, d, k); }
Tensor Tensor::max(std::int64_t d, bool k) const { return convkit::max(*this, d, k); }
Tensor Tensor::max() const { return convkit::max(*this); }
Tensor Tensor::argmax(std::int64_t d, bool k) const { return convkit::argmax(*this, d, k); }
Tensor Tensor::var(const std::vector<std::int64_t>& d, bool u, bool k) const { return convkit::var(*this, d, u, k); }
Tensor Tensor::exp() const { return convkit::exp(*this); }
Tensor Tensor::log() const { return convkit::log(*this); }
Tensor Tensor::sqrt() const { return convkit::sqrt(*this); }
Tensor Tensor::abs() const { return convkit::abs(*this); }
Tensor Tensor::pow(double e) const { return convkit::pow(*this, e); }
Tensor Tensor::relu() const { return convkit::relu(*this); }
Tensor Tensor::sigmoid() const { return convkit::sigmoid(*this); }
Tensor Tensor::tanh() const { return convkit::tanh(*this); }
Tensor Tensor::clamp(double lo, double hi) const { return convkit::clamp(*this, lo, hi); }
Tensor Tensor::matmul(const Tensor& o) const { return convkit::matmul(*this, o); }

}  // namespace convkit
