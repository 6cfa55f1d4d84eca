// Every elementwise op against a float64 reference (random shapes, size-1
// dims, broadcasting, non-contiguous views, both float dtypes, every device)
// and by gradcheck.
#include <cmath>

#include "support/support.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::random_shape;
using testing::random_tensor;

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;  // input domain (kept away from kinks and poles for gradcheck)
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return -x; }, [](double v) { return -v; }, -2, 2},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double v) { return std::exp(v); }, -2, 2},
      {"log", [](const Tensor& x) { return log(x); }, [](double v) { return std::log(v); }, 0.2, 3},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }, 0.2, 3},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double v) { return std::abs(v); }, 0.1, 2},
      {"square", [](const Tensor& x) { return square(x); }, [](double v) { return v * v; }, -2, 2},
      {"pow2.5", [](const Tensor& x) { return pow(x, 2.5); }, [](double v) { return std::pow(v, 2.5); }, 0.2, 2},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.5); }, [](double v) { return std::clamp(v, -0.5, 0.5); }, -1, 1},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double v) { return v > 0 ? v : 0; }, -1, 1},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double v) { return 1 / (1 + std::exp(-v)); }, -3, 3},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double v) { return std::tanh(v); }, -3, 3},
      {"add_scalar", [](const Tensor& x) { return x + 1.5; }, [](double v) { return v + 1.5; }, -2, 2},
      {"rsub_scalar", [](const Tensor& x) { return 1.5 - x; }, [](double v) { return 1.5 - v; }, -2, 2},
      {"mul_scalar", [](const Tensor& x) { return x * -3.0; }, [](double v) { return v * -3; }, -2, 2},
      {"rdiv_scalar", [](const Tensor& x) { return 2.0 / x; }, [](double v) { return 2 / v; }, 0.5, 2},
  };
}

// Values near a kink (|x| < 0.05 for relu/abs/clamp at ±0.5) make central
// differences meaningless; push them away.
Tensor away_from_kinks(const Tensor& x) {
  auto v = x.to_vector<double>();
  for (double& e : v) {
    for (double k : {0.0, 0.5, -0.5})
      if (std::abs(e - k) < 0.05) e = k + (e >= k ? 0.05 : -0.05);
  }
  return from_vector(v, x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
}

class Elementwise : public ::testing::TestWithParam<Device> {};

TEST_P(Elementwise, UnaryOpsMatchFloat64Reference) {
  std::mt19937_64 rng(testing::kSeed);
  for (const auto& c : unary_cases()) {
    for (DType dt : {DType::float32, DType::float64}) {
      for (int rank = 0; rank <= 4; ++rank) {
        const Tensor x = random_tensor(random_shape(rng, rank), rng, TensorOptions().dtype(dt).device(GetParam()), c.lo, c.hi);
        std::vector<double> want;
        for (double v : x.to_vector<double>()) want.push_back(c.ref(v));
        const double tol = dt == DType::float32 ? 1e-5 : 1e-12;
        EXPECT_TRUE(all_close(c.op(x), want, tol, tol)) << c.name << " " << dt << " " << x.shape();
        EXPECT_TRUE(all_close(c.op(testing::noncontiguous(x)), want, tol, tol)) << c.name << " strided";
      }
    }
  }
}

TEST_P(Elementwise, UnaryOpsPassGradcheck) {
  std::mt19937_64 rng(testing::kSeed + 1);
  for (const auto& c : unary_cases()) {
    Tensor x = away_from_kinks(random_tensor({3, 4}, rng, TensorOptions().dtype(DType::float64).device(GetParam()), c.lo, c.hi));
    x.requires_grad_();
    EXPECT_TRUE(grad_ok([&](const std::vector<Tensor>& in) { return c.op(in[0]); }, {x})) << c.name;
  }
}

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  double lo, hi;
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }, -2, 2},
      {"add_alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, -0.5); }, [](double a, double b) { return a - 0.5 * b; }, -2, 2},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; }, -2, 2},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }, -2, 2},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; }, 0.5, 2},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, [](double a, double b) { return std::pow(a, b); }, 0.5, 2},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, [](double a, double b) { return std::max(a, b); }, -2, 2},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, [](double a, double b) { return std::min(a, b); }, -2, 2},
  };
}

TEST_P(Elementwise, BinaryOpsBroadcastLikeNumPy) {
  std::mt19937_64 rng(testing::kSeed + 2);
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 1}, {1, 5}}, {{}, {2, 3}}, {{2, 1, 3}, {4, 1}},
      {{1}, {1}}, {{5, 1, 1, 2}, {3, 1}}};
  for (const auto& c : binary_cases()) {
    for (DType dt : {DType::float32, DType::float64}) {
      for (const auto& [sa, sb] : shapes) {
        const TensorOptions o = TensorOptions().dtype(dt).device(GetParam());
        const Tensor a = random_tensor(sa, rng, o, c.lo, c.hi), b = random_tensor(sb, rng, o, c.lo, c.hi);
        const Shape out = broadcast_shapes(sa, sb, "test");
        const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
        std::vector<double> want;
        for (std::int64_t i = 0; i < out.numel(); ++i) {
          const auto idx = testing::unravel(i, out);
          want.push_back(c.ref(av[static_cast<std::size_t>(testing::broadcast_index(idx, sa))],
                               bv[static_cast<std::size_t>(testing::broadcast_index(idx, sb))]));
        }
        const double tol = dt == DType::float32 ? 1e-5 : 1e-12;
        const Tensor got = c.op(a, b);
        EXPECT_EQ(got.shape(), out);
        EXPECT_TRUE(all_close(got, want, tol, tol)) << c.name << " " << sa << " " << sb;
        EXPECT_TRUE(all_close(c.op(testing::noncontiguous(a), testing::noncontiguous(b)), want, tol, tol))
            << c.name << " strided " << sa << " " << sb;
      }
    }
  }
}

TEST_P(Elementwise, BinaryOpsPassGradcheckThroughBroadcasting) {
  std::mt19937_64 rng(testing::kSeed + 3);
  for (const auto& c : binary_cases()) {
    const TensorOptions o = TensorOptions().dtype(DType::float64).device(GetParam()).requires_grad();
    const Tensor a = random_tensor({3, 4}, rng, o, c.lo, c.hi), b = random_tensor({4}, rng, o, c.lo, c.hi);
    EXPECT_TRUE(grad_ok([&](const std::vector<Tensor>& in) { return c.op(in[0], in[1]); }, {a, b})) << c.name;
  }
}

TEST_P(Elementwise, ComparisonsAndWhere) {
  const TensorOptions o = TensorOptions().device(GetParam());
  const Tensor a = from_vector(std::vector<float>{1, 2, 3}, {3}, o);
  const Tensor b = from_vector(std::vector<float>{2, 2, 2}, {3}, o);
  EXPECT_EQ(lt(a, b).to_vector<double>(), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(le(a, b).to_vector<double>(), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(gt(a, b).to_vector<double>(), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(ge(a, b).to_vector<double>(), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(eq(a, b).to_vector<double>(), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(ne(a, b).to_vector<double>(), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(where(gt(a, b), a, b * 10.0).to_vector<double>(), (std::vector<double>{20, 20, 3}));
  std::mt19937_64 rng(testing::kSeed + 4);
  const TensorOptions g = TensorOptions().dtype(DType::float64).device(GetParam()).requires_grad();
  const Tensor x = random_tensor({2, 3}, rng, g), y = random_tensor({3}, rng, g);
  const Tensor cond = gt(random_tensor({2, 3}, rng, TensorOptions().dtype(DType::float64).device(GetParam())),
                         zeros({}, TensorOptions().dtype(DType::float64).device(GetParam())));
  EXPECT_TRUE(grad_ok([&](const std::vector<Tensor>& in) { return where(cond, in[0], in[1]); }, {x, y}));
}

INSTANTIATE_TEST_SUITE_P(Devices, Elementwise, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_name);

}  // namespace
}  // namespace convkit
