// The per-layer profiler: how a model is split into units, that a profiled
// step computes exactly what a plain one does, and that forward and backward
// time land on the layer that spent it (checked with layers that sleep).
#include <chrono>
#include <thread>

#include "train_fixtures.h"

namespace convkit {
namespace {

using testing::small_cnn;

// Identity whose forward or backward sleeps for a known time.
struct Sleeper : nn::Module {
  std::chrono::milliseconds forward_sleep, backward_sleep;
  Sleeper(int forward_ms, int backward_ms)
      : Module("Sleeper"), forward_sleep(forward_ms), backward_sleep(backward_ms) {}
  Tensor forward(const Tensor& x) override {
    std::this_thread::sleep_for(forward_sleep);
    Tensor out = x.detach().clone();
    const auto pause = backward_sleep;
    return autograd::record(out, "SleeperBackward", {x}, [pause](const Tensor& g) {
      std::this_thread::sleep_for(pause);
      return std::vector<Tensor>{g};
    });
  }
};

TEST(Profiler, UnitsOpenPlainSequentials) {
  auto inner = std::make_shared<nn::Sequential>();
  inner->push_back(std::make_shared<nn::ReLU>());
  inner->push_back("named", std::make_shared<nn::Flatten>());
  auto outer = std::make_shared<nn::Sequential>();
  outer->push_back(std::make_shared<nn::Conv2d>(1, 2, 3));
  outer->push_back(inner);
  outer->push_back(std::make_shared<nn::Linear>(2, 2));
  train::LayerProfiler p(*outer, kCPU);
  EXPECT_EQ(p.units(), (std::vector<std::pair<std::string, std::string>>{
                           {"0", "Conv2d"}, {"1.0", "ReLU"}, {"1.named", "Flatten"}, {"2", "Linear"}}));

  nn::BasicBlock block(2, 2);  // not a Sequential: one unit
  train::LayerProfiler q(block, kCPU);
  EXPECT_EQ(q.units(), (std::vector<std::pair<std::string, std::string>>{{"(model)", "BasicBlock"}}));
}

// The profiler times the steps the forward takes: a batch norm and its ReLU
// are one row, as they are one pass; and the profiled step is still the
// plain one, bit for bit.
TEST(Profiler, FusedStepsAreOneUnitAndComputeTheSame) {
  auto make = [] {
    auto net = std::make_shared<nn::Sequential>();
    net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3).padding(1)));
    net->push_back(std::make_shared<nn::BatchNorm2d>(4));
    net->push_back(std::make_shared<nn::ReLU>());
    net->push_back(std::make_shared<nn::ReLU>());
    net->push_back(std::make_shared<nn::MaxPool2d>(2));
    net->push_back(std::make_shared<nn::Flatten>());
    net->push_back(std::make_shared<nn::Linear>(4 * 4 * 4, 3));
    return net;
  };
  manual_seed(10);
  auto plain_model = make();
  manual_seed(10);
  auto model = make();
  train::LayerProfiler prof(*model, kCPU);
  EXPECT_EQ(prof.units(), (std::vector<std::pair<std::string, std::string>>{{"0", "Conv2d"},
                                                                            {"1+2", "BatchNorm2d+ReLU"},
                                                                            {"3+4", "ReLU+MaxPool2d"},
                                                                            {"5", "Flatten"},
                                                                            {"6", "Linear"}}));
  std::mt19937_64 rng(testing::kSeed);
  const Tensor x = testing::random_tensor({3, 1, 8, 8}, rng);
  const Tensor y = from_vector(std::vector<std::int64_t>{0, 2, 1}, {3}, DType::int64);
  const Tensor plain = (*plain_model)(x);
  train::compute_loss(train::LossKind::automatic, plain, y).backward();
  const Tensor out = prof.forward(x);
  EXPECT_EQ(out.to_vector<float>(), plain.to_vector<float>());
  prof.backward(prof.loss([&] { return train::compute_loss(train::LossKind::automatic, out, y); }));
  prof.end_step(3);
  const auto want = plain_model->parameters(), got = model->parameters();
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i].grad().to_vector<float>(), want[i].grad().to_vector<float>()) << i;
  const train::ProfileReport& r = prof.report();
  EXPECT_GT(r.layers[1].backward_seconds, 0) << "the fused node's backward lands on its row";
  EXPECT_EQ(r.by_type().size(), 5u);
}

TEST(Profiler, ProfiledStepComputesTheSame) {
  std::mt19937_64 rng(testing::kSeed);
  manual_seed(9);
  auto model = small_cnn(4);
  const Tensor x = testing::random_tensor({3, 1, 8, 8}, rng);
  const Tensor y = from_vector(std::vector<std::int64_t>{0, 3, 1}, {3}, DType::int64);

  const Tensor plain = (*model)(x);
  train::compute_loss(train::LossKind::automatic, plain, y).backward();
  std::vector<std::vector<float>> want;
  for (const Tensor& p : model->parameters()) want.push_back(p.grad().to_vector<float>());
  model->zero_grad();

  train::LayerProfiler prof(*model, kCPU);
  const Tensor out = prof.forward(x);
  EXPECT_EQ(out.to_vector<float>(), plain.to_vector<float>());
  const Tensor loss = prof.loss([&] { return train::compute_loss(train::LossKind::automatic, out, y); });
  prof.backward(loss);
  prof.end_step(3);
  std::size_t i = 0;
  for (const Tensor& p : model->parameters()) EXPECT_EQ(p.grad().to_vector<float>(), want[i++]);
  // The observer is removed again: a later backward is not profiled.
  const double before = prof.report().layers[0].backward_seconds;
  train::compute_loss(train::LossKind::automatic, (*model)(x), y).backward();
  EXPECT_EQ(prof.report().layers[0].backward_seconds, before);
}

TEST(Profiler, TimeLandsOnTheLayerThatSpentIt) {
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 2, 3).padding(1)));
  model->push_back(std::make_shared<Sleeper>(0, 30));  // slow backward
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<Sleeper>(20, 0));  // slow forward
  model->push_back(std::make_shared<nn::Flatten>());
  model->push_back(std::make_shared<nn::Linear>(2 * 8 * 8, 3));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  std::mt19937_64 rng(testing::kSeed);
  const Tensor x = testing::random_tensor({2, 1, 8, 8}, rng);
  const Tensor y = from_vector(std::vector<std::int64_t>{0, 2}, {2}, DType::int64);

  train::LayerProfiler prof(*model, kCPU);
  const int steps = 3;
  for (int s = 0; s < steps; ++s) {
    prof.data_wait(0.001);
    const Tensor out = prof.forward(x);
    const Tensor loss = prof.loss([&] { return train::compute_loss(train::LossKind::automatic, out, y); });
    prof.optimizer([&] { opt.zero_grad(); });
    prof.backward(loss);
    prof.optimizer([&] { opt.step(); });
    prof.end_step(2);
  }
  const train::ProfileReport& r = prof.report();
  EXPECT_EQ(r.steps, steps);
  EXPECT_EQ(r.images, 2 * steps);
  ASSERT_EQ(r.layers.size(), 6u);
  const auto& slow_back = r.layers[1];
  const auto& slow_fwd = r.layers[3];
  EXPECT_GE(slow_back.backward_seconds, steps * 0.030);
  EXPECT_LT(slow_back.forward_seconds, steps * 0.010);
  EXPECT_GE(slow_fwd.forward_seconds, steps * 0.020);
  EXPECT_LT(slow_fwd.backward_seconds, steps * 0.010);
  // The sleeps dominate: no other layer got their time.
  for (std::size_t i : {0u, 2u, 4u, 5u}) EXPECT_LT(r.layers[i].total_seconds(), steps * 0.010) << i;
  EXPECT_GT(r.loss.forward_seconds, 0);
  EXPECT_GT(r.loss.backward_seconds, 0);  // the cross-entropy node
  EXPECT_GT(r.layers[0].backward_seconds, 0);
  EXPECT_GT(r.layers[5].backward_seconds, 0);
  EXPECT_NEAR(r.data_seconds, steps * 0.001, 1e-12);

  // Everything is accounted for: the rows add up to no more than the total.
  double rows = r.loss.total_seconds() + r.engine_seconds + r.optimizer_seconds + r.data_seconds;
  for (const auto& l : r.layers) rows += l.total_seconds();
  EXPECT_LE(rows, r.total_seconds + 1e-9);
  EXPECT_GT(rows, 0.95 * r.total_seconds);

  const auto types = r.by_type();
  ASSERT_EQ(types.front().type, "Sleeper");
  EXPECT_EQ(types.front().count, 2);
  const std::string table = r.table();
  for (const char* part : {"profile: 3 steps, 6 images", "layer", "fwd ms", "bwd ms", "Sleeper",
                           "Conv2d", "autograd engine", "optimizer", "data wait", "by layer type:"})
    EXPECT_NE(table.find(part), std::string::npos) << part << "\n" << table;
}

TEST(Profiler, MergeAddsReports) {
  auto model = small_cnn(4);
  train::LayerProfiler p(*model, kCPU);
  train::ProfileReport a = p.report();
  a.steps = 2;
  a.layers[0].forward_seconds = 1;
  train::ProfileReport b = a;
  a.merge(b);
  EXPECT_EQ(a.steps, 4);
  EXPECT_EQ(a.layers[0].forward_seconds, 2);
  train::ProfileReport other;
  EXPECT_THROW(a.merge(other), Error);
}

}  // namespace
}  // namespace convkit
