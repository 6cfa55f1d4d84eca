// Sample builders and reference helpers shared by the op table's files.
#include "ops/op_info.h"

#include <cmath>

namespace convkit::testing {

double Values::at(const std::vector<std::int64_t>& idx) const {
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < idx.size(); ++d) flat = flat * shape[d] + idx[d];
  return v[static_cast<std::size_t>(flat)];
}

Values values_of(const Tensor& t) { return {t.shape(), t.to_vector<double>()}; }

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table = [] {
    std::vector<OpInfo> all = elementwise_op_infos();
    for (OpInfo& info : layer_op_infos()) all.push_back(std::move(info));
    for (OpInfo& info : conv_op_infos()) all.push_back(std::move(info));
    return all;
  }();
  return table;
}

Tensor values_in(const Shape& shape, std::mt19937_64& rng, double lo, double hi, std::vector<double> kinks,
                 double gap) {
  std::vector<double> v = random_tensor(shape, rng, TensorOptions().dtype(DType::float64), lo, hi).to_vector<double>();
  for (double& e : v)
    for (double k : kinks)
      if (std::abs(e - k) < gap) e = k + (e >= k ? gap : -gap);
  return from_vector(v, shape, TensorOptions().dtype(DType::float64));
}

Tensor strided(const Tensor& t) {
  if (t.dim() == 0) return t;
  // Each element paired with a copy of itself along a new last dim, then the
  // first of each pair: stride 2 in the last dim and doubled strides above it.
  const Tensor pairs = cat({t.unsqueeze(-1), t.unsqueeze(-1)}, -1);
  return pairs.select(-1, 0);
}

Tensor transposed(const Tensor& t) {
  if (t.dim() < 2) return t;
  return t.transpose(-2, -1).contiguous().transpose(-2, -1);
}

std::vector<Sample> unary_samples(std::mt19937_64& rng, double lo, double hi, std::vector<double> kinks) {
  auto x = [&](const Shape& s) { return std::vector<Tensor>{values_in(s, rng, lo, hi, kinks)}; };
  return {
      {"odd [3, 5]", x({3, 5}), {}},
      {"rank 0", x({}), {}},
      {"batch 1 [1, 7, 1]", x({1, 7, 1}), {}},
      {"long [2, 37]", x({2, 37}), {}, false},
      {"strided [4, 3]", x({4, 3}), strided},
      {"transposed [5, 3]", x({5, 3}), transposed},
      {"broadcast [1, 3] to [4, 3]", x({1, 3}), [](const Tensor& t) { return t.expand({4, 3}); }},
      {"empty [0, 3]", x({0, 3}), {}, false},
  };
}

std::vector<Sample> binary_samples(std::mt19937_64& rng, double lo, double hi, std::vector<double> kinks) {
  auto xy = [&](const Shape& a, const Shape& b) {
    return std::vector<Tensor>{values_in(a, rng, lo, hi, kinks), values_in(b, rng, lo, hi, kinks)};
  };
  return {
      {"same [3, 4]", xy({3, 4}, {3, 4}), {}},
      {"broadcast [3, 4] x [4]", xy({3, 4}, {4}), {}},
      {"broadcast [3, 1] x [1, 5]", xy({3, 1}, {1, 5}), {}},
      {"scalar [] x [2, 3]", xy({}, {2, 3}), {}},
      {"batch 1 [1, 1, 3] x [4, 1]", xy({1, 1, 3}, {4, 1}), {}},
      {"long [2, 37] x [37]", xy({2, 37}, {37}), {}, false},
      {"strided [3, 4] x [3, 4]", xy({3, 4}, {3, 4}), strided},
      {"transposed [5, 3] x [5, 3]", xy({5, 3}, {5, 3}), transposed},
  };
}

std::function<Values(const std::vector<Values>&)> unary_reference(std::function<double(double)> f) {
  return [f = std::move(f)](const std::vector<Values>& in) {
    Values out{in[0].shape, {}};
    for (double e : in[0].v) out.v.push_back(f(e));
    return out;
  };
}

std::function<Values(const std::vector<Values>&)> binary_reference(std::function<double(double, double)> f) {
  return [f = std::move(f)](const std::vector<Values>& in) {
    const Shape shape = broadcast_shapes(in[0].shape, in[1].shape, "reference");
    Values out{shape, {}};
    for (std::int64_t i = 0; i < shape.numel(); ++i) {
      const auto idx = unravel(i, shape);
      out.v.push_back(f(in[0].v[static_cast<std::size_t>(broadcast_index(idx, in[0].shape))],
                        in[1].v[static_cast<std::size_t>(broadcast_index(idx, in[1].shape))]));
    }
    return out;
  };
}

}  // namespace convkit::testing
