// leaky_relu, elu, softmax and log_softmax against float64 references (softmax
// along every dim, with huge logits for stability) and by gradcheck.
#include <cmath>
#include <limits>

#include "layers/layer_testing.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::opts;
using testing::random_tensor;

// Softmax of v (shape s) along dim d, or its log.
std::vector<double> ref_softmax(const std::vector<double>& v, const Shape& s, std::int64_t d, bool log) {
  std::vector<double> out(v.size());
  Shape kept = s;
  kept[static_cast<std::size_t>(d)] = 1;
  std::vector<double> mx(static_cast<std::size_t>(kept.numel()), -std::numeric_limits<double>::infinity());
  std::vector<double> sum(mx.size(), 0.0);
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    auto& m = mx[static_cast<std::size_t>(testing::broadcast_index(testing::unravel(i, s), kept))];
    m = std::max(m, v[static_cast<std::size_t>(i)]);
  }
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    const auto k = static_cast<std::size_t>(testing::broadcast_index(testing::unravel(i, s), kept));
    sum[k] += std::exp(v[static_cast<std::size_t>(i)] - mx[k]);
  }
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    const auto k = static_cast<std::size_t>(testing::broadcast_index(testing::unravel(i, s), kept));
    const double z = v[static_cast<std::size_t>(i)] - mx[k];
    out[static_cast<std::size_t>(i)] = log ? z - std::log(sum[k]) : std::exp(z) / sum[k];
  }
  return out;
}

class Activation : public ::testing::TestWithParam<Device> {};

TEST_P(Activation, LeakyReluAndEluMatchReference) {
  std::mt19937_64 rng(testing::kSeed + 400);
  for (DType dt : {DType::float32, DType::float64}) {
    for (const Shape& s : {Shape{7}, Shape{2, 3, 5}, Shape{1, 4, 3, 3}}) {
      const Tensor x = random_tensor(s, rng, opts(dt, GetParam()), -3, 3);
      const auto v = x.to_vector<double>();
      for (double slope : {0.01, 0.2}) {
        std::vector<double> want;
        for (double e : v) want.push_back(e > 0 ? e : slope * e);
        EXPECT_TRUE(all_close(leaky_relu(testing::noncontiguous(x), slope), want, testing::tol_for(dt), testing::tol_for(dt)));
      }
      for (double alpha : {1.0, 0.5}) {
        std::vector<double> want;
        for (double e : v) want.push_back(e > 0 ? e : alpha * (std::exp(e) - 1));
        EXPECT_TRUE(all_close(elu(testing::noncontiguous(x), alpha), want, testing::tol_for(dt), testing::tol_for(dt)));
      }
    }
  }
  // Defaults: torch's 0.01 and 1.0.
  const Tensor x = from_vector(std::vector<double>{-2, 3}, {2}, opts(DType::float64, GetParam()));
  EXPECT_TRUE(all_close(leaky_relu(x), {-0.02, 3}, 1e-15, 0));
  EXPECT_TRUE(all_close(elu(x), {std::exp(-2.0) - 1, 3}, 1e-15, 0));
}

TEST_P(Activation, LeakyReluAndEluGradients) {
  std::mt19937_64 rng(testing::kSeed + 401);
  const Tensor x = random_tensor({4, 5}, rng, opts(DType::float64, GetParam()).requires_grad(), -2, 2);
  EXPECT_TRUE(grad_ok([](const auto& in) { return leaky_relu(in[0], 0.1); }, {x}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return elu(in[0], 0.7); }, {x}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return elu(in[0].t()); }, {x}));
  // At exactly 0 the gradient is the negative-side one, as torch.
  Tensor z = zeros({1}, opts(DType::float64, GetParam())).requires_grad_();
  leaky_relu(z, 0.25).sum().backward();
  EXPECT_DOUBLE_EQ(z.grad().item(), 0.25);
}

TEST_P(Activation, SoftmaxAlongEveryDim) {
  std::mt19937_64 rng(testing::kSeed + 402);
  for (DType dt : {DType::float32, DType::float64}) {
    for (const Shape& s : {Shape{6}, Shape{1, 10}, Shape{3, 5}, Shape{2, 3, 4}, Shape{2, 70, 3, 1}, Shape{1, 3, 5, 67}}) {
      for (bool huge : {false, true}) {
        // Logits around 1000 overflow exp unless the maximum is subtracted first.
        const Tensor x = random_tensor(s, rng, opts(dt, GetParam()), huge ? 995 : -4, huge ? 1005 : 4);
        const auto v = x.to_vector<double>();
        for (std::int64_t d = -x.dim(); d < x.dim(); ++d) {
          const std::int64_t dd = d < 0 ? d + x.dim() : d;
          const double tol = dt == DType::float32 ? (huge ? 2e-4 : 2e-5) : 1e-11;
          EXPECT_TRUE(all_close(softmax(testing::noncontiguous(x), d), ref_softmax(v, s, dd, false), tol, tol))
              << s << " dim " << d;
          EXPECT_TRUE(all_close(log_softmax(x, d), ref_softmax(v, s, dd, true), tol, tol)) << s << " dim " << d;
        }
      }
    }
  }
}

TEST_P(Activation, SoftmaxGradients) {
  std::mt19937_64 rng(testing::kSeed + 403);
  const Tensor x = random_tensor({3, 4, 5}, rng, opts(DType::float64, GetParam()).requires_grad(), -2, 2);
  for (std::int64_t d : {0, 1, 2, -1}) {
    EXPECT_TRUE(grad_ok([d](const auto& in) { return softmax(in[0], d); }, {x})) << d;
    EXPECT_TRUE(grad_ok([d](const auto& in) { return log_softmax(in[0], d); }, {x})) << d;
  }
  EXPECT_TRUE(grad_ok([](const auto& in) { return log_softmax(in[0].transpose(0, 2), 1); }, {x}));
}

TEST_P(Activation, BadArgumentsAreClearErrors) {
  const Tensor x = zeros({2, 3}, GetParam());
  EXPECT_TRUE(testing::throws_with([&] { softmax(x, 2); }, {"softmax"}));
  EXPECT_TRUE(testing::throws_with([&] { log_softmax(zeros({}, GetParam()), 0); }, {"log_softmax"}));
  EXPECT_TRUE(testing::throws_with([&] { elu(zeros({2}, TensorOptions(DType::int64).device(GetParam()))); }, {"elu", "int64"}));
}

INSTANTIATE_TEST_SUITE_P(Devices, Activation, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
