// The cost of fit()'s per-step NaN/Inf check (FitOptions::nonfinite), set
// against the training step it guards, on the quickstart model:
//
//   step/fmnist-cnn/cpu/batch64    zero_grad, forward, loss, backward, SGD step
//   check/fmnist-cnn/cpu/batch64   the check alone, on that step's loss and
//                                  gradients (loss + every gradient's sum,
//                                  read once: train/nonfinite.h)
//
// The check's share of a step is the ratio of the two; docs/training.md
// records it. Synthetic data, sized like Fashion-MNIST.
#include <benchmark/benchmark.h>

#include <convkit/convkit.h>

#include "convkit/models/zoo.h"
#include "convkit/train/loss.h"
#include "train/nonfinite.h"

using namespace convkit;

namespace {

struct Step {
  std::shared_ptr<nn::Module> model = models::create("fmnist-cnn");
  optim::SGD optimizer{model->parameters(), optim::SGDOptions(0.01).momentum(0.9)};
  Tensor images = uniform({64, 1, 28, 28}, 0, 1);
  Tensor labels;
  Tensor loss;

  Step() {
    std::vector<std::int64_t> y(64);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int64_t>(i % 10);
    labels = from_vector(y, {64}, TensorOptions().dtype(DType::int64));
    model->train();
  }
  void run() {
    optimizer.zero_grad();
    loss = train::compute_loss(train::LossKind::automatic, model->forward(images), labels);
    loss.backward();
    optimizer.step();
  }
};

void BM_step(benchmark::State& state) {
  Step s;
  s.run();  // warm-up: allocator caches, algorithm choice
  for (auto _ : state) s.run();
}

void BM_check(benchmark::State& state) {
  Step s;
  s.run();
  bool finite = true;
  for (auto _ : state) finite = finite && train::detail::step_sum_is_finite(*s.model, s.loss);
  if (!finite) state.SkipWithError("the step was not finite");
}

}  // namespace

BENCHMARK(BM_step)->Name("step/fmnist-cnn/cpu/batch64")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_check)->Name("check/fmnist-cnn/cpu/batch64")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_MAIN();
