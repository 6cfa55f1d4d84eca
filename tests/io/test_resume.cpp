// Resuming from a checkpoint continues training exactly: K steps, save, load
// into fresh objects, K more steps gives the same losses and weights, bit for
// bit, as 2K steps without a break. Needs the optimizer state, BatchNorm's
// buffers, and the generator (dropout draws its masks from it).
#include "io/io_testing.h"

namespace convkit {
namespace {

using io_testing::ScratchDir;
using io_testing::same_bits;

constexpr int kSteps = 4;

// The batch of step `step`, the same whichever run asks for it.
std::pair<Tensor, Tensor> batch(int step) {
  std::mt19937_64 rng(testing::kSeed + static_cast<std::uint64_t>(step));
  const Tensor x = testing::random_tensor({6, 2, 8, 8}, rng);
  std::vector<std::int64_t> labels;
  for (int i = 0; i < 6; ++i) labels.push_back(static_cast<std::int64_t>(rng() % 3));
  return {x, from_vector(labels, {6}, DType::int64)};
}

std::vector<float> train(nn::Module& net, optim::Optimizer& opt, int from, int to) {
  std::vector<float> losses;
  net.train();
  for (int step = from; step < to; ++step) {
    auto [x, y] = batch(step);
    opt.zero_grad();
    Tensor loss = cross_entropy(net(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<float>());
  }
  return losses;
}

std::shared_ptr<nn::Module> make_net() {
  return nn::build_module(
      "Sequential(Conv2d(2, 4, 3, init=keras), BatchNorm2d(4), ReLU(), MaxPool2d(2), Dropout(0.3), Flatten(), "
      "Linear(36, 16), ReLU(), Dropout(0.5), Linear(16, 3))");
}

struct Case {
  const char* name;
  std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make;
};

class Resume : public ::testing::TestWithParam<Case> {};

TEST_P(Resume, ContinuesBitForBit) {
  ScratchDir dir;
  // The uninterrupted run.
  manual_seed(11);
  auto net = make_net();
  auto opt = GetParam().make(net->parameters());
  const std::vector<float> whole = train(*net, *opt, 0, 2 * kSteps);
  const Generator whole_generator = default_generator();

  // The interrupted one: same start, a checkpoint after K steps.
  manual_seed(11);
  auto first = make_net();
  auto first_opt = GetParam().make(first->parameters());
  std::vector<float> resumed = train(*first, *first_opt, 0, kSteps);
  io::Checkpoint ck = io::make_checkpoint(*first, first_opt.get());
  ck.step = kSteps;
  io::save_checkpoint(dir.file("k.ckpt"), ck);
  first.reset();
  first_opt.reset();

  // Something else uses the generator in between, as a new process would start elsewhere.
  manual_seed(12345);
  const io::Checkpoint back = io::load_checkpoint(dir.file("k.ckpt"));
  auto second = io::build_model(back);
  auto second_opt = io::build_optimizer(back, *second);
  io::restore_generator(back);
  const auto rest = train(*second, *second_opt, static_cast<int>(back.step), 2 * kSteps);
  resumed.insert(resumed.end(), rest.begin(), rest.end());

  ASSERT_EQ(resumed.size(), whole.size());
  for (std::size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(std::memcmp(&resumed[i], &whole[i], sizeof(float)), 0)
        << "step " << i << ": " << resumed[i] << " vs " << whole[i];
  }
  EXPECT_TRUE(same_bits(second->state_dict(), net->state_dict()));
  EXPECT_TRUE(same_bits(second_opt->state_dict(), opt->state_dict()));
  EXPECT_EQ(default_generator().seed, whole_generator.seed);
  EXPECT_EQ(default_generator().offset, whole_generator.offset);
}

TEST_P(Resume, WithoutTheGeneratorTheRunDiverges) {
  // The control: skipping restore_generator changes the dropout masks, so
  // the test above would notice a checkpoint that lost the RNG state.
  ScratchDir dir;
  manual_seed(11);
  auto net = make_net();
  auto opt = GetParam().make(net->parameters());
  const std::vector<float> whole = train(*net, *opt, 0, 2 * kSteps);

  manual_seed(11);
  auto first = make_net();
  auto first_opt = GetParam().make(first->parameters());
  train(*first, *first_opt, 0, kSteps);
  io::save_checkpoint(dir.file("k.ckpt"), io::make_checkpoint(*first, first_opt.get()));
  manual_seed(12345);
  const io::Checkpoint back = io::load_checkpoint(dir.file("k.ckpt"));
  auto second = io::build_model(back);
  auto second_opt = io::build_optimizer(back, *second);
  const auto rest = train(*second, *second_opt, kSteps, 2 * kSteps);
  EXPECT_NE(rest.back(), whole.back());
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, Resume,
    ::testing::Values(
        Case{"adam", [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
               return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions(1e-2).weight_decay(1e-3));
             }},
        Case{"adam_composed", [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
               return std::make_unique<optim::AdamW>(std::move(p), optim::AdamOptions(1e-2).fused(false));
             }},
        Case{"sgd_nesterov", [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
               return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions(0.05).momentum(0.9).nesterov());
             }},
        Case{"rmsprop_centered", [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
               return std::make_unique<optim::RMSprop>(std::move(p),
                                                       optim::RMSpropOptions(1e-3).momentum(0.5).centered());
             }}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace convkit
