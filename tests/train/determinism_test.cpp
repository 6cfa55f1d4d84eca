// Determinism: the same seed, device and thread count give the same run bit
// for bit — every epoch's loss and accuracy, and the final weights — with
// the parts that draw random numbers all in play: shuffling, augmentation in
// two loader workers, dropout, and batch norm's running statistics.
// docs/training.md lists what changes the bits (thread count, algorithm).
#include "train_fixtures.h"

namespace convkit {
namespace {

using testing::loader_options;
using testing::quadrant_dataset;
using testing::quiet;

struct RunResult {
  std::vector<double> losses, accuracies;
  std::vector<float> weights;
};

RunResult train_once(Device device) {
  manual_seed(21);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 6, 3).padding(1)));
  model->push_back(std::make_shared<nn::BatchNorm2d>(6));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::MaxPool2d>(2));
  model->push_back(std::make_shared<nn::Flatten>());
  model->push_back(std::make_shared<nn::Dropout>(0.3));
  model->push_back(std::make_shared<nn::Linear>(6 * 4 * 4, 4));
  data::DataLoaderOptions lo = loader_options(8);
  lo.workers = 2;
  lo.augmentation.width_shift_range = 0.2;
  lo.augmentation.horizontal_flip = true;
  data::DataLoader loader(quadrant_dataset(48, 4, 3), lo);
  optim::Adam opt(model->parameters(), optim::AdamOptions(1e-2));
  train::FitOptions o = quiet(3);
  o.device = device;
  const train::History h = train::fit(*model, opt, loader, o);
  RunResult run;
  run.losses = h.metric("loss");
  run.accuracies = h.metric("accuracy");
  for (const auto& [name, t] : model->state_dict()) {
    if (t.dtype() != DType::float32) continue;  // batch norm's sample count
    const Tensor c = t.to(kCPU).contiguous();
    run.weights.insert(run.weights.end(), c.data<float>(), c.data<float>() + c.numel());
  }
  return run;
}

class Determinism : public ::testing::TestWithParam<Device> {};

TEST_P(Determinism, SameSeedDeviceAndThreadsGiveTheSameBits) {
  const RunResult a = train_once(GetParam()), b = train_once(GetParam());
  ASSERT_EQ(a.losses.size(), 3u);
  // Exact comparisons: the same bits, not merely close values.
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.accuracies, b.accuracies);
  EXPECT_EQ(a.weights, b.weights);
  EXPECT_NE(a.losses[0], a.losses[2]);  // it trained
}

INSTANTIATE_TEST_SUITE_P(Devices, Determinism, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_name);

}  // namespace
}  // namespace convkit
