// The layer modules: each forward against the functional op it wraps or a
// float64 reference, the parameters and buffers each registers, the state
// BatchNorm keeps, mode-dependent behaviour, and argument errors.
#include "support/support.h"

#include <cmath>

namespace convkit {
namespace {

using testing::all_close;
using testing::random_tensor;

class Layers : public ::testing::TestWithParam<Device> {
 protected:
  TensorOptions f64() const { return TensorOptions().dtype(DType::float64).device(GetParam()); }
};

std::vector<std::string> keys(const StateDict& d) {
  std::vector<std::string> out;
  for (const auto& e : d) out.push_back(e.first);
  return out;
}

TEST_P(Layers, Conv2dWrapsTheFunctionalOpWithItsOptions) {
  std::mt19937_64 rng(testing::kSeed + 50);
  const Tensor x = random_tensor({2, 4, 9, 7}, rng, f64());
  struct Case {
    nn::Conv2dOptions options;
    Shape out;
  };
  const std::vector<Case> cases = {
      {nn::Conv2dOptions(4, 6, 3), {2, 6, 7, 5}},
      {nn::Conv2dOptions(4, 6, 3).padding(1), {2, 6, 9, 7}},
      {nn::Conv2dOptions(4, 6, 3).stride(2).padding("same"), {2, 6, 5, 4}},
      {nn::Conv2dOptions(4, 6, 5).padding("same"), {2, 6, 9, 7}},
      {nn::Conv2dOptions(4, 6, 3, 1).padding("valid").bias(false), {2, 6, 7, 7}},
      {nn::Conv2dOptions(4, 6, 3).dilation(2).padding(2, 1), {2, 6, 9, 5}},
      {nn::Conv2dOptions(4, 6, 3).groups(2).stride(1, 2).padding(0, 1, 1, 0), {2, 6, 8, 3}},
  };
  for (const auto& c : cases) {
    nn::Conv2d conv(c.options);
    conv.to(GetParam());
    conv.to(DType::float64);
    EXPECT_EQ(conv.weight.shape(), (Shape{6, 4 / c.options.groups_, c.options.kernel_size_[0], c.options.kernel_size_[1]}));
    EXPECT_EQ(conv.bias.defined(), c.options.bias_);
    EXPECT_EQ(conv.parameters().size(), c.options.bias_ ? 2u : 1u);
    const Tensor y = conv(x);
    EXPECT_EQ(y.shape(), c.out) << conv.extra_repr();
    const Tensor want = conv2d(x, conv.weight, conv.bias, c.options.params());
    EXPECT_TRUE(all_close(y, want.to_vector<double>(), 0, 0)) << conv.extra_repr();
  }
}

TEST_P(Layers, Conv2dRejectsBadOptionsAndInputs) {
  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(4, 6, 3).groups(3)), Error);
  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(0, 6, 3)), Error);
  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(4, 6, 0)), Error);
  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(4, 6, 3).stride(0)), Error);
  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(4, 6, 3).padding(-1)), Error);
  EXPECT_THROW(nn::Conv2dOptions(4, 6, 3).padding("full"), Error);
  nn::Conv2d conv(nn::Conv2dOptions(4, 6, 3));
  conv.to(GetParam());
  try {
    conv(zeros({1, 3, 8, 8}, GetParam()));
    ADD_FAILURE() << "no error for 3 channels into a 4-channel conv";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected input [N, 4, H, W], got shape [1, 3, 8, 8]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(conv(zeros({4, 8, 8}, GetParam())), Error);
}

TEST_P(Layers, SetConvAlgoReachesEveryConv) {
  nn::Sequential net;
  auto a = net.push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 2, 3)));
  auto inner = net.push_back(std::make_shared<nn::Sequential>());
  auto b = inner->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 2, 3).algo(ConvAlgo::direct)));
  nn::set_conv_algo(net, ConvAlgo::fft);
  EXPECT_EQ(a->options().algo_, ConvAlgo::fft);
  EXPECT_EQ(b->options().algo_, ConvAlgo::fft);
  EXPECT_EQ(a->options().params().algo_, ConvAlgo::fft);
}

TEST_P(Layers, LinearIsXWTransposedPlusB) {
  std::mt19937_64 rng(testing::kSeed + 51);
  nn::Linear fc(nn::LinearOptions(5, 3));
  fc.to(GetParam());
  fc.to(DType::float64);
  for (const Shape& shape : {Shape{4, 5}, Shape{2, 3, 5}, Shape{5}}) {
    const Tensor x = random_tensor(shape, rng, f64());
    const auto xv = x.to_vector<double>(), w = fc.weight.to_vector<double>(), b = fc.bias.to_vector<double>();
    const std::int64_t rows = x.numel() / 5;
    std::vector<double> want;
    for (std::int64_t r = 0; r < rows; ++r)
      for (int o = 0; o < 3; ++o) {
        double acc = b[static_cast<std::size_t>(o)];
        for (int i = 0; i < 5; ++i) acc += xv[static_cast<std::size_t>(r * 5 + i)] * w[static_cast<std::size_t>(o * 5 + i)];
        want.push_back(acc);
      }
    const Tensor y = fc(x);
    Shape out = shape;
    out[out.size() - 1] = 3;
    EXPECT_EQ(y.shape(), out);
    EXPECT_TRUE(all_close(y, want, 1e-12, 1e-12)) << shape;
  }
  nn::Linear nobias(nn::LinearOptions(5, 3).bias(false));
  EXPECT_FALSE(nobias.bias.defined());
  EXPECT_EQ(keys(nobias.named_parameters()), (std::vector<std::string>{"weight"}));
  EXPECT_THROW(fc(zeros({2, 4}, f64())), Error);
  EXPECT_THROW(nn::Linear(0, 3), Error);
}

// Per-channel batch statistics of [N, C, H, W] (or [N, C]) in float64.
void channel_stats(const Tensor& x, std::vector<double>& mean, std::vector<double>& unbiased_var) {
  const auto v = x.to_vector<double>();
  const std::int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  mean.assign(static_cast<std::size_t>(C), 0);
  unbiased_var.assign(static_cast<std::size_t>(C), 0);
  for (std::int64_t c = 0; c < C; ++c) {
    double s = 0, ss = 0;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < S; ++i) s += v[static_cast<std::size_t>((n * C + c) * S + i)];
    const double m = s / static_cast<double>(N * S);
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < S; ++i) {
        const double d = v[static_cast<std::size_t>((n * C + c) * S + i)] - m;
        ss += d * d;
      }
    mean[static_cast<std::size_t>(c)] = m;
    unbiased_var[static_cast<std::size_t>(c)] = ss / static_cast<double>(N * S - 1);
  }
}

// y = (x - mean) / sqrt(var + eps) * w + b per channel.
std::vector<double> normalise(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& var,
                              const std::vector<double>& w, const std::vector<double>& b, double eps) {
  const auto v = x.to_vector<double>();
  const std::int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  std::vector<double> out(v.size());
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const auto c = static_cast<std::size_t>((i / S) % C);
    out[static_cast<std::size_t>(i)] = (v[static_cast<std::size_t>(i)] - mean[c]) / std::sqrt(var[c] + eps) * w[c] + b[c];
  }
  return out;
}

TEST_P(Layers, BatchNorm2dTrainsRunningStatsAndEvalUsesThem) {
  std::mt19937_64 rng(testing::kSeed + 52);
  nn::BatchNorm2d bn(nn::BatchNormOptions(3).momentum(0.2).eps(1e-3));
  bn.to(GetParam());
  bn.to(DType::float64);
  EXPECT_EQ(keys(bn.state_dict()),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  nn::init::uniform_(bn.weight, 0.5, 1.5);
  nn::init::uniform_(bn.bias, -1, 1);
  const auto w = bn.weight.to_vector<double>(), b = bn.bias.to_vector<double>();
  std::vector<double> rm(3, 0.0), rv(3, 1.0);
  for (int batch = 1; batch <= 3; ++batch) {
    const Tensor x = random_tensor({4, 3, 5, 3}, rng, f64(), -2, 3);
    std::vector<double> mean, var;
    channel_stats(x, mean, var);
    std::vector<double> biased(var);
    for (double& v : biased) v *= (4.0 * 15 - 1) / (4.0 * 15);
    const Tensor y = bn(x);
    EXPECT_TRUE(all_close(y, normalise(x, mean, biased, w, b, 1e-3), 1e-10, 1e-10)) << "batch " << batch;
    for (std::size_t c = 0; c < 3; ++c) {
      rm[c] = 0.8 * rm[c] + 0.2 * mean[c];
      rv[c] = 0.8 * rv[c] + 0.2 * var[c];
    }
    EXPECT_TRUE(all_close(bn.running_mean, rm, 1e-12, 1e-12)) << "batch " << batch;
    EXPECT_TRUE(all_close(bn.running_var, rv, 1e-12, 1e-12)) << "batch " << batch;
    EXPECT_EQ(bn.num_batches_tracked.item(), batch);
  }
  bn.eval();
  const std::vector<double> trained_mean = bn.running_mean.to_vector<double>();
  const Tensor x = random_tensor({2, 3, 4, 4}, rng, f64());
  EXPECT_TRUE(all_close(bn(x), normalise(x, rm, rv, w, b, 1e-3), 1e-12, 1e-12));
  EXPECT_EQ(bn.num_batches_tracked.item(), 3.0);  // eval does not count
  EXPECT_EQ(bn.running_mean.to_vector<double>(), trained_mean);  // nor move the statistics
}

TEST_P(Layers, BatchNormCumulativeAverageAndLoadedCounter) {
  std::mt19937_64 rng(testing::kSeed + 53);
  nn::BatchNorm1d bn(nn::BatchNormOptions(2).cumulative_average());
  bn.to(GetParam());
  bn.to(DType::float64);
  std::vector<double> sum_mean(2, 0.0);
  for (int batch = 1; batch <= 3; ++batch) {
    const Tensor x = random_tensor({6, 2}, rng, f64(), -1, 2);
    std::vector<double> mean, var;
    channel_stats(x, mean, var);
    bn(x);
    for (std::size_t c = 0; c < 2; ++c) sum_mean[c] += mean[c];
  }
  // momentum None: the running mean is the plain average of the batch means.
  EXPECT_TRUE(all_close(bn.running_mean, {sum_mean[0] / 3, sum_mean[1] / 3}, 1e-12, 1e-12));

  // A loaded counter is honoured: after loading 9 batches, the next factor is 1/10.
  StateDict state = bn.state_dict();
  for (auto& [key, t] : state) t = t.clone();
  state[4].second = full({}, 9, TensorOptions().dtype(DType::int64));
  state[2].second = zeros({2}, f64());
  bn.load_state_dict(state);
  const Tensor x = random_tensor({6, 2}, rng, f64());
  std::vector<double> mean, var;
  channel_stats(x, mean, var);
  bn(x);
  EXPECT_EQ(bn.num_batches_tracked.item(), 10.0);
  EXPECT_TRUE(all_close(bn.running_mean, {mean[0] / 10, mean[1] / 10}, 1e-12, 1e-12));
}

TEST_P(Layers, BatchNorm1dAcceptsNCAndNCL) {
  std::mt19937_64 rng(testing::kSeed + 54);
  nn::BatchNorm1d bn(4);
  bn.to(GetParam());
  bn.to(DType::float64);
  const Tensor x3 = random_tensor({3, 4, 5}, rng, f64());
  std::vector<double> mean, var;
  channel_stats(x3, mean, var);
  for (double& v : var) v *= 14.0 / 15.0;
  const Tensor y3 = bn(x3);
  EXPECT_EQ(y3.shape(), x3.shape());
  EXPECT_TRUE(all_close(y3, normalise(x3, mean, var, std::vector<double>(4, 1), std::vector<double>(4, 0), 1e-5), 1e-10, 1e-10));
  EXPECT_EQ(bn(random_tensor({3, 4}, rng, f64())).shape(), (Shape{3, 4}));
  EXPECT_THROW(bn(zeros({3, 4, 5, 6}, f64())), Error);
  EXPECT_THROW(bn(zeros({3, 5}, f64())), Error);
  nn::BatchNorm2d bn2(4);
  EXPECT_THROW(bn2(zeros({3, 4}, GetParam())), Error);
}

TEST_P(Layers, BatchNormWithoutAffineOrTracking) {
  std::mt19937_64 rng(testing::kSeed + 55);
  nn::BatchNorm2d plain(nn::BatchNormOptions(2).affine(false).track_running_stats(false));
  plain.to(GetParam());
  EXPECT_TRUE(plain.parameters().empty());
  EXPECT_TRUE(plain.buffers().empty());
  plain.eval();  // without running stats, eval still normalises with the batch's
  const Tensor x = random_tensor({3, 2, 4, 4}, rng, TensorOptions().device(GetParam()));
  std::vector<double> mean, var;
  channel_stats(x, mean, var);
  for (double& v : var) v *= 47.0 / 48.0;
  EXPECT_TRUE(all_close(plain(x), normalise(x, mean, var, {1, 1}, {0, 0}, 1e-5), 1e-5, 1e-5));
  EXPECT_THROW(nn::BatchNorm2d(0), Error);
  EXPECT_THROW(nn::BatchNorm2d(nn::BatchNormOptions(2).momentum(1.5)), Error);
}

TEST_P(Layers, DropoutDependsOnMode) {
  nn::Dropout drop(0.3);
  const Tensor x = ones({200, 100}, GetParam());
  manual_seed(4);
  const auto v = drop(x).to_vector<double>();
  std::int64_t zeros_seen = 0;
  for (double e : v) {
    if (e == 0) {
      ++zeros_seen;
    } else {
      EXPECT_NEAR(e, 1 / 0.7, 1e-6);
    }
  }
  EXPECT_NEAR(static_cast<double>(zeros_seen) / 20000.0, 0.3, 0.02);
  drop.eval();
  EXPECT_TRUE(drop(x).same(x));
  EXPECT_THROW(nn::Dropout(1.5), Error);
  EXPECT_EQ(nn::Dropout(1.0).p(), 1.0);
}

TEST_P(Layers, ActivationsMatchTheirFormulas) {
  std::mt19937_64 rng(testing::kSeed + 56);
  const Tensor x = random_tensor({3, 7}, rng, f64(), -3, 3);
  const auto v = x.to_vector<double>();
  auto map = [&](double (*f)(double)) {
    std::vector<double> out;
    for (double e : v) out.push_back(f(e));
    return out;
  };
  EXPECT_TRUE(all_close(nn::ReLU()(x), map([](double e) { return std::max(e, 0.0); }), 0, 0));
  EXPECT_TRUE(all_close(nn::LeakyReLU(0.2)(x), map([](double e) { return e > 0 ? e : 0.2 * e; }), 1e-15, 0));
  EXPECT_TRUE(all_close(nn::ELU(0.5)(x), map([](double e) { return e > 0 ? e : 0.5 * std::expm1(e); }), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(nn::Sigmoid()(x), map([](double e) { return 1 / (1 + std::exp(-e)); }), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(nn::Tanh()(x), map([](double e) { return std::tanh(e); }), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(nn::SiLU()(x), map([](double e) { return e / (1 + std::exp(-e)); }), 1e-12, 1e-12));
  std::vector<double> sm(v.size()), lsm(v.size());
  for (int r = 0; r < 3; ++r) {
    double z = 0;
    for (int c = 0; c < 7; ++c) z += std::exp(v[static_cast<std::size_t>(r * 7 + c)]);
    for (int c = 0; c < 7; ++c) {
      const auto i = static_cast<std::size_t>(r * 7 + c);
      sm[i] = std::exp(v[i]) / z;
      lsm[i] = v[i] - std::log(z);
    }
  }
  EXPECT_TRUE(all_close(nn::Softmax(1)(x), sm, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(nn::LogSoftmax(-1)(x), lsm, 1e-12, 1e-12));
  EXPECT_EQ(nn::Softmax(1).str(), "Softmax(dim=1)");
  EXPECT_EQ(nn::LeakyReLU().str(), "LeakyReLU(negative_slope=0.01)");
}

TEST_P(Layers, PoolingAndFlattenShapes) {
  // 4x4 input holding 0..15: 2x2 max pooling takes each block's bottom-right.
  const Tensor x = arange(16, f64()).reshape({1, 1, 4, 4});
  EXPECT_TRUE(all_close(nn::MaxPool2d(2)(x), {5, 7, 13, 15}, 0, 0));
  EXPECT_TRUE(all_close(nn::AvgPool2d(2)(x), {2.5, 4.5, 10.5, 12.5}, 1e-15, 0));
  nn::MaxPool2d overlapping(nn::MaxPool2dOptions(3).stride(1).padding(1));
  EXPECT_EQ(overlapping(x).shape(), (Shape{1, 1, 4, 4}));
  EXPECT_TRUE(all_close(nn::GlobalAvgPool2d()(x), {7.5}, 1e-15, 0));
  const Tensor img = zeros({2, 3, 5, 4}, GetParam());
  EXPECT_EQ(nn::GlobalAvgPool2d()(img).shape(), (Shape{2, 3, 1, 1}));
  EXPECT_EQ(nn::Flatten()(img).shape(), (Shape{2, 60}));
  EXPECT_EQ(nn::Flatten(0, 1)(img).shape(), (Shape{6, 5, 4}));
  EXPECT_THROW(nn::MaxPool2d(2)(zeros({3, 4, 4}, GetParam())), Error);
  EXPECT_THROW(nn::MaxPool2d(0), Error);
  EXPECT_THROW(nn::AvgPool2d(nn::AvgPool2dOptions(2).padding(2)), Error);
}

INSTANTIATE_TEST_SUITE_P(Devices, Layers, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
