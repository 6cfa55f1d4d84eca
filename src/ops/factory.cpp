#include "convkit/ops/factory.h"

#include <algorithm>
#include <cmath>

#include "ops/op_helpers.h"

namespace convkit {

namespace {

Tensor finish(Tensor t, const TensorOptions& opts) {
  if (opts.requires_grad_) t.requires_grad_(true);
  return t;
}

TensorOptions without_grad(TensorOptions opts) { return opts.requires_grad(false); }

}  // namespace

Tensor empty(const Shape& shape, TensorOptions opts) { return Tensor::empty(shape, opts); }

Tensor full(const Shape& shape, double value, TensorOptions opts) {
  Tensor t = Tensor::empty(shape, without_grad(opts));
  if (t.numel()) backend_for(t.device()).fill(t, value);
  return finish(t, opts);
}

Tensor zeros(const Shape& shape, TensorOptions opts) { return full(shape, 0.0, opts); }
Tensor ones(const Shape& shape, TensorOptions opts) { return full(shape, 1.0, opts); }

namespace {
TensorOptions like(const Tensor& t) { return TensorOptions().dtype(t.dtype()).device(t.device()); }
}  // namespace

Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), like(t)); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), like(t)); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), like(t)); }

Tensor arange(double start, double end, double step, TensorOptions opts) {
  CK_CHECK(step != 0, "arange: step must be nonzero");
  const double n = std::ceil((end - start) / step);
  CK_CHECK(std::isfinite(n), "arange: non-finite length for start ", start, ", end ", end, ", step ", step);
  const auto count = static_cast<std::int64_t>(std::max(0.0, n));
  Tensor t = Tensor::empty({count}, without_grad(opts));
  if (count) backend_for(t.device()).arange(t, start, step);
  return finish(t, opts);
}

Tensor arange(double end, TensorOptions opts) { return arange(0, end, 1, opts); }

std::uint64_t Generator::reserve(std::uint64_t n) {
  const std::uint64_t start = offset;
  offset += (n + 3) / 4 * 4;  // whole Philox blocks, so every draw starts on a block
  return start;
}

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(std::uint64_t seed) {
  default_generator() = Generator{seed, 0};
}

Tensor uniform(const Shape& shape, double lo, double hi, TensorOptions opts) {
  CK_CHECK(lo <= hi, "uniform: lower bound ", lo, " is above upper bound ", hi);
  Tensor t = Tensor::empty(shape, without_grad(opts));
  detail::check_floating("uniform", t);
  Generator& g = default_generator();
  const std::uint64_t offset = g.reserve(static_cast<std::uint64_t>(t.numel()));
  if (t.numel()) backend_for(t.device()).uniform(t, g.seed, offset, lo, hi);
  return finish(t, opts);
}

Tensor normal(const Shape& shape, double mean, double std, TensorOptions opts) {
  CK_CHECK(std >= 0, "normal: std must be non-negative, got ", std);
  Tensor t = Tensor::empty(shape, without_grad(opts));
  detail::check_floating("normal", t);
  Generator& g = default_generator();
  const std::uint64_t offset = g.reserve(static_cast<std::uint64_t>(t.numel()));
  if (t.numel()) backend_for(t.device()).normal(t, g.seed, offset, mean, std);
  return finish(t, opts);
}

Tensor rand(const Shape& shape, TensorOptions opts) { return uniform(shape, 0, 1, opts); }
Tensor randn(const Shape& shape, TensorOptions opts) { return normal(shape, 0, 1, opts); }

namespace {
template <typename T>
Tensor from_host(const std::vector<T>& values, const Shape& shape, TensorOptions opts) {
  CK_CHECK(static_cast<std::int64_t>(values.size()) == shape.numel(), "from_vector: ", values.size(),
           " values do not fill shape ", shape, " (", shape.numel(), " elements)");
  Tensor host = Tensor::empty(shape, TensorOptions().dtype(dtype_of<T>::value));
  std::copy(values.begin(), values.end(), host.data<T>());
  return finish(host.to(opts.dtype_).to(opts.device_), opts);
}
}  // namespace

Tensor from_vector(const std::vector<float>& v, const Shape& s, TensorOptions o) { return from_host(v, s, o); }
Tensor from_vector(const std::vector<double>& v, const Shape& s, TensorOptions o) { return from_host(v, s, o); }
Tensor from_vector(const std::vector<std::int64_t>& v, const Shape& s, TensorOptions o) {
  if (!o.dtype_given_) o.dtype(DType::int64);
  return from_host(v, s, o);
}

Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, TensorOptions opts) {
  CK_CHECK(low < high, "randint: low (", low, ") must be below high (", high, ")");
  const double range = static_cast<double>(high) - static_cast<double>(low);
  CK_CHECK(range <= 0x1p52, "randint: the range [", low, ", ", high, ") is wider than 2^52");
  // Drawn on the host from the same Philox stream as every other factory, so
  // the values do not depend on the device they end up on.
  const std::vector<double> u = uniform(shape, 0, range, DType::float64).to_vector<double>();
  std::vector<std::int64_t> values(u.size());
  for (std::size_t i = 0; i < u.size(); ++i)
    values[i] = low + std::min(static_cast<std::int64_t>(u[i]), high - low - 1);  // u < range, but rounding
  if (!opts.dtype_given_) opts.dtype(DType::int64);
  return from_host(values, shape, opts);
}

Tensor scalar_tensor(double value, TensorOptions opts) { return full({}, value, opts); }

}  // namespace convkit
