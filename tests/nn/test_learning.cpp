// The learning test: a small CNN (conv-relu-pool-conv-relu-pool-flatten-linear)
// memorises a fixed batch of 16 random 1x12x12 images with 4 classes, with
// each convolution algorithm. It checks that the whole stack — modules,
// conv2d / pooling / cross_entropy and their gradients, Adam — actually learns,
// and that the algorithms, started from identical weights, follow the same
// trajectory step by step.
#include "support/support.h"

#include <cmath>
#include <cstdio>

namespace convkit {
namespace {

constexpr int kSteps = 60;
constexpr double kLr = 0.01;

std::shared_ptr<nn::Sequential> small_cnn(ConvAlgo algo) {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3).padding(1).algo(algo)));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(4, 8, 3).padding(1).algo(algo)));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(8 * 3 * 3, 4));
  return net;
}

struct Batch {
  Tensor images, labels;
};

Batch fixed_batch(Device device, DType dtype) {
  manual_seed(2024);
  std::vector<std::int64_t> labels;
  for (int i = 0; i < 16; ++i) labels.push_back(i % 4);
  return {randn({16, 1, 12, 12}, TensorOptions().dtype(dtype).device(device)),
          from_vector(labels, {16}, TensorOptions().dtype(DType::int64).device(device))};
}

// The loss before each of kSteps Adam steps, from weights seeded identically
// for every algorithm.
std::vector<double> train(ConvAlgo algo, Device device, DType dtype) {
  manual_seed(7);
  auto net = small_cnn(algo);
  net->to(device);
  net->to(dtype);
  const Batch batch = fixed_batch(device, dtype);
  optim::Adam opt(net->parameters(), optim::AdamOptions(kLr));
  std::vector<double> losses;
  for (int step = 0; step < kSteps; ++step) {
    opt.zero_grad();
    Tensor loss = cross_entropy((*net)(batch.images), batch.labels);
    losses.push_back(loss.item());
    loss.backward();
    opt.step();
  }
  return losses;
}

// Why the backend of `device` cannot run `algo` for this network's two conv
// layers (the reason conv2d itself would give), or empty when it can.
std::string unsupported_reason(ConvAlgo algo, Device device) {
  const Conv2dParams params = Conv2dParams().padding(1).algo(algo);
  for (const auto& [x, w] : {std::pair<Shape, Shape>{{16, 1, 12, 12}, {4, 1, 3, 3}}, {{16, 4, 6, 6}, {8, 4, 3, 3}}}) {
    const Support s = backend_for(device).conv2d_supports(algo, make_conv2d_desc(x, w, params));
    if (!s.ok) return s.reason;
  }
  return {};
}

class Learning : public ::testing::TestWithParam<Device> {};

// float32, as users train. The algorithms differ only in rounding (summation
// order; FFT's transforms round differently from direct sums), about 1e-7
// relative per conv output. Training feeds those differences back through 60
// Adam steps; measured on the cpu, the loss trajectories of im2col_gemm and
// fft stay within 2e-6 relative of direct's. The tolerance, 1e-4 relative
// (plus 1e-6 absolute), leaves 50x headroom for other backends' rounding yet
// tight enough to catch a wrong gradient in one algorithm: 1% random error in
// the first conv's weight gradient alone breaks it by step 8.
TEST_P(Learning, SmallCnnOverfitsAFixedBatchWithEveryConvAlgorithm) {
  const Device device = GetParam();
  std::vector<std::pair<ConvAlgo, std::vector<double>>> runs;
  for (const ConvAlgoInfo& info : kConvAlgorithms) {
    const ConvAlgo algo = info.algo;
    const std::string why = unsupported_reason(algo, device);
    if (!why.empty()) {
      std::printf("[  SKIPPED ] %s on %s: %s\n", std::string(conv_algo_name(algo)).c_str(), device.str().c_str(),
                  why.c_str());
      continue;
    }
    const auto losses = train(algo, device, DType::float32);
    const double start = losses.front(), end = losses.back();
    int reached = -1;
    for (int s = 0; s < kSteps && reached < 0; ++s)
      if (losses[static_cast<std::size_t>(s)] < 0.01 * start) reached = s;
    std::printf("[   INFO   ] %s on %s: loss %.4f -> %.6f, below 1%% of the start at step %d\n",
                std::string(conv_algo_name(algo)).c_str(), device.str().c_str(), start, end, reached);
    EXPECT_NEAR(start, std::log(4.0), 0.3) << conv_algo_name(algo);  // near-uniform predictions at the start
    EXPECT_LT(end, 0.01 * start) << conv_algo_name(algo) << " did not overfit the batch";
    runs.emplace_back(algo, losses);
  }
  ASSERT_FALSE(runs.empty()) << "no convolution algorithm ran";
  for (std::size_t r = 1; r < runs.size(); ++r)
    for (int s = 0; s < kSteps; ++s) {
      const double a = runs[0].second[static_cast<std::size_t>(s)], b = runs[r].second[static_cast<std::size_t>(s)];
      ASSERT_NEAR(b, a, 1e-6 + 1e-4 * std::abs(a))
          << conv_algo_name(runs[r].first) << " vs " << conv_algo_name(runs[0].first) << " at step " << s;
    }
}

INSTANTIATE_TEST_SUITE_P(Devices, Learning, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
