// linear (any number of leading dims, with and without bias) and cat (any
// dim, mixed sizes) against float64 references and by gradcheck.
#include "ops/ops_testing.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::opts;
using testing::random_tensor;

class LinearCat : public ::testing::TestWithParam<Device> {};

TEST_P(LinearCat, LinearMatchesReference) {
  std::mt19937_64 rng(testing::kSeed + 600);
  for (DType dt : {DType::float32, DType::float64}) {
    for (const Shape& xs : {Shape{1, 5}, Shape{4, 5}, Shape{5}, Shape{2, 3, 5}}) {
      for (bool with_bias : {true, false}) {
        const std::int64_t in = 5, out = 3;
        const Tensor x = random_tensor(xs, rng, opts(dt, GetParam()));
        const Tensor w = random_tensor({out, in}, rng, opts(dt, GetParam()));
        const Tensor b = with_bias ? random_tensor({out}, rng, opts(dt, GetParam())) : Tensor();
        const auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
        const auto bv = with_bias ? b.to_vector<double>() : std::vector<double>(static_cast<std::size_t>(out), 0.0);
        std::vector<double> want;
        for (std::int64_t r = 0; r < x.numel() / in; ++r)
          for (std::int64_t o = 0; o < out; ++o) {
            double acc = bv[static_cast<std::size_t>(o)];
            for (std::int64_t i = 0; i < in; ++i)
              acc += xv[static_cast<std::size_t>(r * in + i)] * wv[static_cast<std::size_t>(o * in + i)];
            want.push_back(acc);
          }
        const Tensor y = linear(testing::noncontiguous(x), w, b);
        std::vector<std::int64_t> dims(xs.begin(), xs.end() - 1);
        dims.push_back(out);
        EXPECT_EQ(y.shape(), Shape(dims));
        EXPECT_TRUE(all_close(y, want, testing::tol_for(dt), testing::tol_for(dt))) << xs;
      }
    }
  }
}

TEST_P(LinearCat, LinearGradients) {
  std::mt19937_64 rng(testing::kSeed + 601);
  const TensorOptions o = opts(DType::float64, GetParam()).requires_grad();
  const Tensor x = random_tensor({2, 3, 4}, rng, o), w = random_tensor({5, 4}, rng, o), b = random_tensor({5}, rng, o);
  EXPECT_TRUE(grad_ok([](const auto& in) { return linear(in[0], in[1], in[2]); }, {x, w, b}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return linear(in[0].select(0, 1), in[1]); }, {x, w}));
}

TEST_P(LinearCat, CatMatchesReference) {
  std::mt19937_64 rng(testing::kSeed + 602);
  for (DType dt : {DType::float32, DType::float64}) {
    for (std::int64_t d : {0, 1, 2, -1}) {
      const std::int64_t dd = d < 0 ? d + 3 : d;
      std::vector<Tensor> parts;
      std::vector<Shape> shapes;
      for (std::int64_t len : {2, 1, 3}) {
        Shape s{2, 3, 4};
        s[static_cast<std::size_t>(dd)] = len;
        shapes.push_back(s);
        Tensor t = random_tensor(s, rng, opts(dt, GetParam()));
        parts.push_back(len == 3 ? testing::noncontiguous(t) : t);
      }
      const Tensor y = cat(parts, d);
      Shape want_shape{2, 3, 4};
      want_shape[static_cast<std::size_t>(dd)] = 6;
      ASSERT_EQ(y.shape(), want_shape);
      // Element (i) of y comes from the part whose range along dd holds i[dd].
      std::vector<double> want;
      for (std::int64_t f = 0; f < want_shape.numel(); ++f) {
        auto idx = testing::unravel(f, want_shape);
        std::size_t p = 0;
        while (idx[static_cast<std::size_t>(dd)] >= shapes[p][static_cast<std::size_t>(dd)]) {
          idx[static_cast<std::size_t>(dd)] -= shapes[p][static_cast<std::size_t>(dd)];
          ++p;
        }
        want.push_back(parts[p].to_vector<double>()[static_cast<std::size_t>(testing::broadcast_index(idx, shapes[p]))]);
      }
      EXPECT_TRUE(all_close(y, want, 0, 0)) << "dim " << d;
    }
  }
}

TEST_P(LinearCat, CatGradients) {
  std::mt19937_64 rng(testing::kSeed + 603);
  const TensorOptions o = opts(DType::float64, GetParam()).requires_grad();
  const Tensor a = random_tensor({2, 3}, rng, o), b = random_tensor({2, 1}, rng, o), c = random_tensor({2, 2}, rng, o);
  EXPECT_TRUE(grad_ok([](const auto& in) { return cat({in[0], in[1], in[2]}, 1); }, {a, b, c}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return cat({in[0].t(), in[0].t()}, 0); }, {a}));
  // An input that needs no gradient is skipped.
  const Tensor frozen = random_tensor({2, 3}, rng, opts(DType::float64, GetParam()));
  EXPECT_TRUE(grad_ok([&](const auto& in) { return cat({frozen, in[0]}, 0); }, {a}));
}

TEST_P(LinearCat, BadArgumentsAreClearErrors) {
  using testing::throws_with;
  const Device d = GetParam();
  EXPECT_TRUE(throws_with([&] { linear(zeros({2, 4}, d), zeros({3, 5}, d)); }, {"linear", "[2, 4]", "[3, 5]"}));
  EXPECT_TRUE(throws_with([&] { linear(zeros({2, 5}, d), zeros({3, 5}, d), zeros({4}, d)); }, {"bias", "[3]", "[4]"}));
  EXPECT_TRUE(throws_with([&] { linear(zeros({2, 5}, d), zeros({5}, d)); }, {"weight", "[5]"}));
  EXPECT_TRUE(throws_with([&] { cat({}, 0); }, {"cat"}));
  EXPECT_TRUE(throws_with([&] { cat({zeros({2, 3}, d), zeros({3, 3}, d)}, 1); }, {"cat", "[3, 3]", "[2, 3]"}));
  EXPECT_TRUE(throws_with([&] { cat({zeros({2, 3}, d), zeros({2, 3}, TensorOptions(DType::float64).device(d))}, 0); },
                          {"cat", "float64"}));
  EXPECT_TRUE(throws_with([&] { cat({zeros({2}, d)}, 1); }, {"cat"}));
}

INSTANTIATE_TEST_SUITE_P(Devices, LinearCat, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
