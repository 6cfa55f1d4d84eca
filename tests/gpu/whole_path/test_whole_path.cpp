// The whole GPU path on every GPU backend (sim, and cuda where usable): a
// small CNN trained for 20 steps on cpu and on the GPU backend from the same
// seed gives the same losses, and dropout masks are bit-identical across them.
#include "gpu/gpu_testing.h"

namespace convkit {
namespace {

std::shared_ptr<nn::Sequential> small_cnn() {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 6, 3).padding(1)));
  net->push_back(std::make_shared<nn::BatchNorm2d>(6));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(6, 8, 3)));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Dropout>(0.25));
  net->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(8 * 2 * 2, 4)));
  return net;
}

// 20 SGD-momentum steps on a fixed batch; returns the loss of every step.
std::vector<double> train(Device device, ConvAlgo algo) {
  manual_seed(123);
  auto net = small_cnn();
  nn::set_conv_algo(*net, algo);
  net->to(device);
  manual_seed(7);  // the batch and every dropout draw come from here on
  const Tensor x = randn({8, 1, 8, 8}).to(device);
  const Tensor y = from_vector(std::vector<std::int64_t>{0, 1, 2, 3, 0, 1, 2, 3}, {8}, TensorOptions().dtype(DType::int64).device(device));
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  std::vector<double> losses;
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    Tensor loss = cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item());
  }
  return losses;
}

class GpuWholePath : public ::testing::TestWithParam<Device> {};

TEST_P(GpuWholePath, TwentyTrainingStepsMatchTheCpu) {
  for (const ConvAlgoInfo& info : kConvAlgorithms) {
    if (!info.gpu) continue;
    const ConvAlgo algo = info.algo;
    const auto cpu = train(kCPU, algo);
    const auto gpu = train(GetParam(), algo);
    ASSERT_EQ(cpu.size(), gpu.size());
    EXPECT_LT(cpu.back(), 0.5 * cpu.front()) << "the network should learn the batch";
    // Both run float32 with different summation orders (tree reductions,
    // tiled GEMMs, FFT); 20 steps of SGD amplify ulp-level differences to
    // around 1e-5 relative, so 1e-3 leaves headroom while a wrong gradient
    // (which changes the trajectory at the first step) fails at once.
    for (std::size_t i = 0; i < cpu.size(); ++i)
      EXPECT_NEAR(gpu[i], cpu[i], 1e-3 * std::abs(cpu[i]) + 1e-5) << conv_algo_name(algo) << " step " << i;
  }
}

TEST_P(GpuWholePath, DropoutMasksAreBitIdenticalAcrossBackends) {
  const Tensor ones_cpu = ones({3, 1000});
  manual_seed(99);
  const auto cpu = dropout(ones_cpu, 0.3, true).to_vector<float>();
  manual_seed(99);
  const auto gpu = dropout(ones_cpu.to(GetParam()), 0.3, true).to_vector<float>();
  EXPECT_EQ(cpu, gpu);
}

INSTANTIATE_TEST_SUITE_P(Devices, GpuWholePath, ::testing::ValuesIn(testing::gpu_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
