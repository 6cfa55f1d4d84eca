// Initialisers: gains and fans as PyTorch computes them, the statistics
// (bounds, mean, std) of every random initialiser, determinism under a seed,
// and the defaults Conv2d and Linear use under Init::pytorch and Init::keras.
#include "support/support.h"

#include <algorithm>
#include <cmath>

namespace convkit {
namespace {

struct Stats {
  double mean = 0, std = 0, min = 0, max = 0;
  std::int64_t n = 0;
};

Stats stats_of(const Tensor& t) {
  const auto v = t.to_vector<double>();
  Stats s;
  s.n = static_cast<std::int64_t>(v.size());
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(s.n);
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(s.n - 1));
  return s;
}

// U(-bound, bound): inside the bounds, reaching close to them, mean 0 and
// std bound / sqrt(3) within sampling error (mean: 5 standard errors; std: 2%).
void expect_uniform(const Tensor& t, double lo, double hi, const std::string& what) {
  const Stats s = stats_of(t);
  const double width = hi - lo, std = width / std::sqrt(12.0);
  EXPECT_GE(s.min, lo) << what;
  EXPECT_LE(s.max, hi) << what;  // float rounding of lo + width * u may reach hi
  EXPECT_LT(s.min, lo + 0.01 * width) << what;
  EXPECT_GT(s.max, hi - 0.01 * width) << what;
  EXPECT_NEAR(s.mean, (lo + hi) / 2, 5 * std / std::sqrt(static_cast<double>(s.n))) << what;
  EXPECT_NEAR(s.std, std, 0.02 * std) << what;
}

void expect_normal(const Tensor& t, double mean, double std, const std::string& what) {
  const Stats s = stats_of(t);
  EXPECT_NEAR(s.mean, mean, 5 * std / std::sqrt(static_cast<double>(s.n))) << what;
  EXPECT_NEAR(s.std, std, 0.02 * std) << what;
  // With ~70k draws the extremes sit near 4 sigma; a bounded draw would not get there.
  EXPECT_GT(s.max, mean + 3.5 * std) << what;
  EXPECT_LT(s.min, mean - 3.5 * std) << what;
}

TEST(Init, GainsAndFansFollowPyTorch) {
  using nn::init::Nonlinearity;
  EXPECT_EQ(nn::init::calculate_gain(Nonlinearity::linear), 1.0);
  EXPECT_EQ(nn::init::calculate_gain(Nonlinearity::conv2d), 1.0);
  EXPECT_EQ(nn::init::calculate_gain(Nonlinearity::sigmoid), 1.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(Nonlinearity::tanh), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(Nonlinearity::relu), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(Nonlinearity::leaky_relu), std::sqrt(2.0 / (1 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(Nonlinearity::leaky_relu, std::sqrt(5.0)), std::sqrt(1.0 / 3.0));
  EXPECT_EQ(nn::init::calculate_fan_in_and_fan_out(empty({16, 8, 3, 5})), (std::pair<std::int64_t, std::int64_t>{120, 240}));
  EXPECT_EQ(nn::init::calculate_fan_in_and_fan_out(empty({10, 7})), (std::pair<std::int64_t, std::int64_t>{7, 10}));
  EXPECT_THROW(nn::init::calculate_fan_in_and_fan_out(empty({5})), Error);
  EXPECT_THROW(nn::init::kaiming_uniform_(empty({5})), Error);
  EXPECT_THROW(nn::init::uniform_(empty({5}, DType::int64)), Error);
  EXPECT_THROW(nn::init::uniform_(empty({5}), 1, 0), Error);
  EXPECT_THROW(nn::init::normal_(Tensor()), Error);
}

class InitOnDevice : public ::testing::TestWithParam<Device> {};

TEST_P(InitOnDevice, RandomInitialisersHaveTheirStatistics) {
  const TensorOptions opts = TensorOptions().device(GetParam());
  const Shape shape{64, 128, 3, 3};  // fan_in 1152, fan_out 576, 73728 draws
  const double fan_in = 1152, fan_out = 576;
  manual_seed(21);
  Tensor t = empty(shape, opts);
  expect_uniform(nn::init::kaiming_uniform_(t), -std::sqrt(6 / fan_in), std::sqrt(6 / fan_in), "kaiming_uniform_");
  const double torch_default = 1 / std::sqrt(fan_in);  // a = sqrt(5)
  expect_uniform(nn::init::kaiming_uniform_(t, std::sqrt(5.0)), -torch_default, torch_default, "kaiming a=sqrt(5)");
  const double fo_bound = std::sqrt(3.0) * (5.0 / 3.0) / std::sqrt(fan_out);
  expect_uniform(nn::init::kaiming_uniform_(t, 0, nn::init::FanMode::fan_out, nn::init::Nonlinearity::tanh),
                 -fo_bound, fo_bound, "kaiming_uniform_ fan_out tanh");
  expect_normal(nn::init::kaiming_normal_(t), 0, std::sqrt(2 / fan_in), "kaiming_normal_");
  expect_normal(nn::init::kaiming_normal_(t, 0.2, nn::init::FanMode::fan_out),
                0, std::sqrt(2 / (1 + 0.04)) / std::sqrt(fan_out), "kaiming_normal_ fan_out leaky 0.2");
  const double xb = std::sqrt(6 / (fan_in + fan_out));
  expect_uniform(nn::init::xavier_uniform_(t), -xb, xb, "xavier_uniform_");
  expect_uniform(nn::init::glorot_uniform_(t, 2.0), -2 * xb, 2 * xb, "glorot_uniform_ gain 2");
  expect_normal(nn::init::xavier_normal_(t), 0, std::sqrt(2 / (fan_in + fan_out)), "xavier_normal_");
  expect_uniform(nn::init::uniform_(t, -3, 5), -3, 5, "uniform_");
  expect_normal(nn::init::normal_(t, 2, 0.5), 2, 0.5, "normal_");
  Tensor d = empty(shape, TensorOptions().device(GetParam()).dtype(DType::float64));
  expect_uniform(nn::init::kaiming_uniform_(d), -std::sqrt(6 / fan_in), std::sqrt(6 / fan_in), "float64");
}

TEST_P(InitOnDevice, ConstantsAndIdentity) {
  Tensor p = empty({3, 4}, GetParam()).requires_grad_();
  // Works on a parameter (a leaf that requires grad) and returns the same handle.
  EXPECT_TRUE(nn::init::constant_(p, 2.5).same(p));
  EXPECT_EQ(p.to_vector<double>(), std::vector<double>(12, 2.5));
  nn::init::zeros_(p);
  EXPECT_EQ(p.to_vector<double>(), std::vector<double>(12, 0.0));
  nn::init::ones_(p);
  EXPECT_EQ(p.to_vector<double>(), std::vector<double>(12, 1.0));
  EXPECT_TRUE(nn::init::kaiming_uniform_(p).same(p));
  EXPECT_TRUE(p.requires_grad());
  EXPECT_TRUE(p.is_leaf());
}

// Philox: a seed gives the same weights on every device.
TEST_P(InitOnDevice, SeededDrawsAreIdenticalAcrossDevices) {
  manual_seed(99);
  Tensor on_cpu = nn::init::kaiming_normal_(empty({8, 4, 3, 3}));
  manual_seed(99);
  Tensor here = nn::init::kaiming_normal_(empty({8, 4, 3, 3}, GetParam()));
  EXPECT_EQ(on_cpu.to_vector<double>(), here.to_vector<double>());
  manual_seed(99);
  nn::Conv2d a(nn::Conv2dOptions(4, 8, 3));
  manual_seed(99);
  nn::Conv2d b(nn::Conv2dOptions(4, 8, 3));
  EXPECT_EQ(a.weight.to_vector<double>(), b.weight.to_vector<double>());
  EXPECT_EQ(a.bias.to_vector<double>(), b.bias.to_vector<double>());
}

INSTANTIATE_TEST_SUITE_P(Devices, InitOnDevice, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

TEST(Init, LayerDefaultsMatchTheirFramework) {
  manual_seed(5);
  // PyTorch: weight and bias both U(+-1/sqrt(fan_in)).
  nn::Conv2d conv(nn::Conv2dOptions(64, 128, 3));
  const double conv_bound = 1 / std::sqrt(64.0 * 9);
  expect_uniform(conv.weight, -conv_bound, conv_bound, "Conv2d weight (pytorch)");
  const Stats cb = stats_of(conv.bias);
  EXPECT_LE(cb.max, conv_bound);
  EXPECT_GE(cb.min, -conv_bound);
  EXPECT_GT(cb.max - cb.min, conv_bound);  // spread, not constant

  nn::Conv2d grouped(nn::Conv2dOptions(64, 128, 3).groups(4));  // fan_in = 16 * 9
  expect_uniform(grouped.weight, -1 / std::sqrt(144.0), 1 / std::sqrt(144.0), "grouped Conv2d weight");

  // Keras: glorot_uniform weight, zero bias.
  nn::Conv2d kconv(nn::Conv2dOptions(64, 128, 3).init(nn::Init::keras));
  const double kb = std::sqrt(6.0 / (64 * 9 + 128 * 9));
  expect_uniform(kconv.weight, -kb, kb, "Conv2d weight (keras)");
  EXPECT_EQ(kconv.bias.to_vector<double>(), std::vector<double>(128, 0.0));

  nn::Linear fc(nn::LinearOptions(300, 250));
  expect_uniform(fc.weight, -1 / std::sqrt(300.0), 1 / std::sqrt(300.0), "Linear weight (pytorch)");
  EXPECT_LE(stats_of(fc.bias).max, 1 / std::sqrt(300.0));
  nn::Linear kfc(nn::LinearOptions(300, 250).init(nn::Init::keras));
  expect_uniform(kfc.weight, -std::sqrt(6.0 / 550), std::sqrt(6.0 / 550), "Linear weight (keras)");
  EXPECT_EQ(kfc.bias.to_vector<double>(), std::vector<double>(250, 0.0));

  // BatchNorm: weight ones, bias zeros, running stats zeros / ones.
  nn::BatchNorm2d bn(6);
  EXPECT_EQ(bn.weight.to_vector<double>(), std::vector<double>(6, 1.0));
  EXPECT_EQ(bn.bias.to_vector<double>(), std::vector<double>(6, 0.0));
  EXPECT_EQ(bn.running_mean.to_vector<double>(), std::vector<double>(6, 0.0));
  EXPECT_EQ(bn.running_var.to_vector<double>(), std::vector<double>(6, 1.0));
  EXPECT_EQ(bn.num_batches_tracked.item(), 0.0);
}

}  // namespace
}  // namespace convkit
