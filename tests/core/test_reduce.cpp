#include "support/support.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::random_tensor;

// Float64 reference: reduce `v` (shape `s`) over `dims` with f(acc, x), row-major output.
std::vector<double> ref_reduce(const std::vector<double>& v, const Shape& s, const std::vector<std::int64_t>& dims,
                               double init, const std::function<double(double, double)>& f) {
  Shape out = s;
  for (auto d : dims) out[static_cast<std::size_t>(d)] = 1;
  std::vector<double> acc(static_cast<std::size_t>(out.numel()), init);
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    const auto idx = testing::unravel(i, s);
    const auto o = testing::broadcast_index(idx, out);
    acc[static_cast<std::size_t>(o)] = f(acc[static_cast<std::size_t>(o)], v[static_cast<std::size_t>(i)]);
  }
  return acc;
}

class Reduce : public ::testing::TestWithParam<Device> {};

TEST_P(Reduce, SumMeanMaxVarOverAnyDims) {
  std::mt19937_64 rng(testing::kSeed + 10);
  const std::vector<std::pair<Shape, std::vector<std::int64_t>>> cases = {
      {{7}, {0}}, {{3, 5}, {0}}, {{3, 5}, {1}}, {{3, 5}, {}}, {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {-1}},
      {{4, 1, 3, 2}, {1, 3}}, {{1, 1}, {0, 1}}, {{2, 3, 4, 5}, {0, 2, 3}}};
  for (DType dt : {DType::float32, DType::float64}) {
    const double tol = dt == DType::float32 ? 1e-5 : 1e-12;
    for (const auto& [shape, dims_in] : cases) {
      for (bool strided : {false, true}) {
        Tensor x = random_tensor(shape, rng, TensorOptions().dtype(dt).device(GetParam()));
        if (strided) x = testing::noncontiguous(x);
        std::vector<std::int64_t> dims;
        if (dims_in.empty()) for (std::int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
        for (auto d : dims_in) dims.push_back(d < 0 ? d + x.dim() : d);
        const auto v = x.to_vector<double>();
        std::int64_t count = 1;
        for (auto d : dims) count *= shape[static_cast<std::size_t>(d)];
        const auto s = ref_reduce(v, shape, dims, 0, [](double a, double b) { return a + b; });
        EXPECT_TRUE(all_close(sum(x, dims_in, true), s, tol, tol)) << shape;
        std::vector<double> m = s;
        for (double& e : m) e /= static_cast<double>(count);
        EXPECT_TRUE(all_close(mean(x, dims_in), m, tol, tol)) << shape;
        EXPECT_TRUE(all_close(sum(x, dims_in, false).reshape({-1}), s, tol, tol));
        if (count > 1) {
          // var = sum((x - mean)^2) / (n - 1)
          std::vector<double> sq(v.size());
          Shape kept = shape;
          for (auto d : dims) kept[static_cast<std::size_t>(d)] = 1;
          for (std::int64_t i = 0; i < shape.numel(); ++i) {
            const double c = v[static_cast<std::size_t>(i)] - m[static_cast<std::size_t>(testing::broadcast_index(testing::unravel(i, shape), kept))];
            sq[static_cast<std::size_t>(i)] = c * c;
          }
          auto var_ref = ref_reduce(sq, shape, dims, 0, [](double a, double b) { return a + b; });
          for (double& e : var_ref) e /= static_cast<double>(count - 1);
          EXPECT_TRUE(all_close(var(x, dims_in), var_ref, 10 * tol, 10 * tol)) << shape;
        }
      }
    }
    // max / argmax along each dim
    const Tensor x = random_tensor({3, 4, 5}, rng, TensorOptions().dtype(dt).device(GetParam()));
    const auto v = x.to_vector<double>();
    for (std::int64_t d = 0; d < 3; ++d) {
      const auto mx = ref_reduce(v, x.shape(), {d}, -1e300, [](double a, double b) { return std::max(a, b); });
      EXPECT_TRUE(all_close(max(x, d), mx, 0, 0));
      const auto idx = argmax(x, d, true);
      EXPECT_EQ(idx.dtype(), DType::int64);
      // The value at argmax equals the max.
      const auto iv = idx.to_vector<std::int64_t>();
      Shape kept = x.shape();
      kept[static_cast<std::size_t>(d)] = 1;
      for (std::int64_t o = 0; o < kept.numel(); ++o) {
        auto mi = testing::unravel(o, kept);
        mi[static_cast<std::size_t>(d)] = iv[static_cast<std::size_t>(o)];
        std::int64_t flat = 0;
        for (std::size_t k = 0; k < 3; ++k) flat = flat * x.shape()[k] + mi[k];
        EXPECT_EQ(v[static_cast<std::size_t>(flat)], mx[static_cast<std::size_t>(o)]);
      }
    }
    EXPECT_EQ(max(x).item(), *std::max_element(v.begin(), v.end()));
    EXPECT_EQ(min(x).item(), *std::min_element(v.begin(), v.end()));
  }
}

TEST_P(Reduce, GradientsPassGradcheck) {
  std::mt19937_64 rng(testing::kSeed + 11);
  const TensorOptions o = TensorOptions().dtype(DType::float64).device(GetParam()).requires_grad();
  const Tensor x = random_tensor({3, 4, 2}, rng, o);
  EXPECT_TRUE(grad_ok([](const auto& in) { return sum(in[0], {0, 2}); }, {x}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return mean(in[0], {1}, true); }, {x}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return sum(in[0]); }, {x}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return var(in[0], {0, 1}); }, {x}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return var(in[0], {}, false); }, {x}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return max(in[0], 1); }, {x}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return max(in[0]); }, {x}));
}

TEST_P(Reduce, BadDimsAreClearErrors) {
  const Tensor x = zeros({2, 3}, GetParam());
  EXPECT_THROW(sum(x, {2}), Error);
  EXPECT_THROW(sum(x, {1, -1}), Error);
  EXPECT_THROW(var(zeros({1}, GetParam())), Error);
  EXPECT_THROW(max(zeros({0}, GetParam())), Error);
}

INSTANTIATE_TEST_SUITE_P(Devices, Reduce, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
