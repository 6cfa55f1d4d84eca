// A lean training step on the sim backend: no device-to-host copy between a
// step's start and its end (bad class targets are checked on the device and
// reported at the next synchronisation), and fit() reads its metrics once per
// log point, not once per step. The counters are the sim build's
// (gpu/device_memory.h); the cuda plugin keeps its own.
#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "gpu/gpu_testing.h"
#include "train/train_fixtures.h"
// Last: the sim's CUDA keywords are macros that the headers above must not see.
#include "gpu/device_memory.h"
#include "kernels/optimizer.cuh"

namespace convkit {
namespace {

using gpu_sim::device_to_host_copies;

Tensor sim_targets(std::vector<std::int64_t> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return from_vector(values, {n}, DType::int64).to(kSim);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LeanStep, BadTargetIsRecordedOnTheDeviceAndRaisedAtTheNextSync) {
  manual_seed(1);
  const Tensor logits = randn({4, 5}).to(kSim);
  const std::uint64_t before = device_to_host_copies();
  const Tensor loss = cross_entropy(logits, sim_targets({0, 1, 7, 2}));  // no copy, no error yet
  EXPECT_EQ(device_to_host_copies(), before);
  const std::string what = error_of([&] { (void)loss.item(); });
  EXPECT_NE(what.find("cross_entropy: target 7 at position 2 is out of range for 5 classes"), std::string::npos)
      << what;
  // Reported once: the record is cleared, and a good loss reads normally.
  EXPECT_NO_THROW((void)cross_entropy(logits, sim_targets({0, 1, 4, 2})).item());
}

TEST(LeanStep, NegativeTargetSurfacesAtSynchronize) {
  manual_seed(2);
  const Tensor logits = randn({3, 4}).to(kSim);
  (void)cross_entropy(logits, sim_targets({-1, 0, 1}), 0.1);
  const std::string what = error_of([] { backend_for(kSim).synchronize(); });
  EXPECT_NE(what.find("target -1 at position 0 is out of range for 4 classes (expected 0 to 3)"),
            std::string::npos)
      << what;
}

TEST(LeanStep, EveryCrossEntropyVersionRecordsBadTargets) {
  manual_seed(3);
  // Kernel families register at their first launch: one valid loss first, so
  // that the test also runs alone (ctest runs each test in its own process).
  (void)cross_entropy(randn({1, 2}).to(kSim), sim_targets({1}), 0, Reduction::none).to_vector<float>();
  // 40 classes: v2 maps rows to warps; 3000: to blocks; v1: a thread per row.
  for (const int version : {1, 2})
    for (const std::int64_t classes : {5, 40, 3000}) {
      testing::ScopedKernelVersion v("softmax", version);
      const Tensor logits = randn({3, classes}).to(kSim);
      const Tensor loss = cross_entropy(logits, sim_targets({0, classes, 1}), 0, Reduction::none);
      const std::string what = error_of([&] { (void)loss.to_vector<float>(); });
      EXPECT_NE(what.find("target " + std::to_string(classes) + " at position 1"), std::string::npos)
          << "v" << version << ", " << classes << " classes: " << what;
    }
}

TEST(LeanStep, CpuTargetsAreStillCheckedAtOnce) {
  const std::string what = error_of([] { (void)cross_entropy(zeros({2, 3}), from_vector(std::vector<std::int64_t>{0, 3}, {2}, DType::int64)); });
  EXPECT_NE(what.find("target 3 at position 1 is out of range for 3 classes"), std::string::npos) << what;
}

// Forward, loss, backward and optimizer step with the batch on the device.
template <typename Opt>
void expect_step_without_copies(Opt& opt, nn::Module& net, const Tensor& x, const Tensor& y) {
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = cross_entropy(net.forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  (void)step().item();  // the first step creates the optimizer state
  const std::uint64_t before = device_to_host_copies();
  for (int i = 0; i < 3; ++i) (void)step();
  EXPECT_EQ(device_to_host_copies(), before) << "device-to-host copies in three training steps";
}

TEST(LeanStep, TrainingStepsCopyNothingToTheHost) {
  manual_seed(4);
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3).padding(1)));
  net->push_back(std::make_shared<nn::BatchNorm2d>(4));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Dropout>(0.2));
  net->push_back(std::make_shared<nn::Linear>(4 * 4 * 4, 3));
  net->to(kSim);
  const Tensor x = randn({6, 1, 8, 8}).to(kSim);
  const Tensor y = sim_targets({0, 1, 2, 0, 1, 2});
  optim::SGD sgd(net->parameters(), optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4).nesterov(true));
  expect_step_without_copies(sgd, *net, x, y);
  optim::AdamW adamw(net->parameters(), optim::AdamOptions(1e-3).weight_decay(0.01));
  expect_step_without_copies(adamw, *net, x, y);
}

std::uint64_t optimizer_launches(const std::vector<sim::KernelProfile>& profile) {
  std::uint64_t n = 0;
  for (const auto& k : profile)
    if (k.kernel.rfind("sgd_v", 0) == 0 || k.kernel.rfind("adam_v", 0) == 0) n += k.launches;
  return n;
}

TEST(LeanStep, OptimizerStepIsOneLaunchPerGroup) {
  if (!sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  manual_seed(6);
  auto net = testing::small_cnn(3);  // 4 parameter tensors
  net->to(kSim);
  const std::vector<Tensor> params = net->parameters();
  const Tensor x = randn({4, 1, 8, 8}).to(kSim);
  const Tensor y = sim_targets({0, 1, 2, 0});
  auto backward = [&] { cross_entropy(net->forward(x), y).backward(); };
  std::vector<optim::ParamGroup> groups{{{params[0], params[1]}, {}, {}}, {{params[2], params[3]}, 0.01, {}}};
  optim::SGD sgd(groups, optim::SGDOptions(0.05).momentum(0.9));
  optim::Adam adam(groups, optim::AdamOptions(1e-3));
  for (optim::Optimizer* opt : std::initializer_list<optim::Optimizer*>{&sgd, &adam})
    for (int step = 0; step < 2; ++step) {  // the first makes the state, the second reuses it
      opt->zero_grad();
      backward();
      sim::ScopedProfile profile;
      opt->step();
      EXPECT_EQ(optimizer_launches(profile.take()), 2u) << opt->name() << " step " << step;
    }
  // The per-tensor twin: one launch per parameter.
  gpu_sim::register_optimizer_kernels();
  testing::ScopedKernelVersion v1("optimizer", 1);
  adam.zero_grad();
  backward();
  sim::ScopedProfile profile;
  adam.step();
  EXPECT_EQ(optimizer_launches(profile.take()), 4u);
}

TEST(LeanStep, MultiTensorStepMatchesThePerTensorStepBitForBit) {
  gpu_sim::register_optimizer_kernels();  // so that the version can be set before the first launch
  auto run = [](int version) {
    testing::ScopedKernelVersion v("optimizer", version);
    manual_seed(7);
    auto net = testing::small_cnn(3);
    net->to(kSim);
    const Tensor x = randn({4, 1, 8, 8}).to(kSim);
    const Tensor y = sim_targets({0, 1, 2, 0});
    optim::SGD sgd(net->parameters(), optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-3));
    optim::AdamW adamw(net->parameters(), optim::AdamOptions(1e-2).weight_decay(0.1));
    for (optim::Optimizer* opt : std::initializer_list<optim::Optimizer*>{&sgd, &adamw, &sgd})
      for (int step = 0; step < 2; ++step) {
        opt->zero_grad();
        cross_entropy(net->forward(x), y).backward();
        opt->step();
      }
    std::vector<std::vector<float>> out;
    for (const Tensor& p : net->parameters()) out.push_back(p.to_vector<float>());
    return out;
  };
  EXPECT_EQ(run(3), run(1));
}

// The device-to-host copies of one fit() epoch of `steps` steps.
std::uint64_t copies_in_fit(std::int64_t steps) {
  manual_seed(5);
  auto net = testing::small_cnn(4);
  net->to(kSim);
  data::DataLoader loader(testing::quadrant_dataset(64, 4, 9), testing::loader_options(8));
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  train::FitOptions options = testing::quiet(1);
  options.steps_per_epoch = steps;
  options.nonfinite = train::NonFinite::unchecked;
  options.device = kSim;
  const std::uint64_t before = device_to_host_copies();
  (void)train::fit(*net, opt, loader, options);
  return device_to_host_copies() - before;
}

TEST(LeanStep, FitReadsTheDeviceOncePerEpochNotPerStep) {
  // The epoch's loss and accuracy are read at its end: more steps, no more copies.
  EXPECT_EQ(copies_in_fit(6), copies_in_fit(2));
}

}  // namespace
}  // namespace convkit
