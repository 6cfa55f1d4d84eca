// train::fit and evaluate on several ranks (FitOptions::process_group), as
// threads of one process (ThreadGroups): the ranks must train as one rank
// with their batches together, report metrics over every rank's examples,
// and take the same branch at a step whose loss is not finite on one rank.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

#include "convkit/data/data_loader.h"
#include "convkit/data/dataset.h"
#include "convkit/dist/device_group.h"
#include "convkit/nn/activation.h"
#include "convkit/nn/batchnorm.h"
#include "convkit/nn/flatten.h"
#include "convkit/nn/linear.h"
#include "convkit/nn/sequential.h"
#include "convkit/ops/factory.h"
#include "convkit/optim/sgd.h"
#include "convkit/train/fit.h"
#include "device_group_checks.h"
#include "fake_groups.h"
#include "train/rank_agreement.h"

namespace convkit::testing {
namespace {

constexpr std::int64_t kExamples = 52;  // not a multiple of the job's batch: a short last step

std::shared_ptr<data::TensorDataset> dataset(bool one_nan) {
  manual_seed(7);
  Tensor images = randn({kExamples, 1, 4, 4});
  Tensor labels = Tensor::empty({kExamples}, TensorOptions(DType::int64));
  for (std::int64_t i = 0; i < kExamples; ++i) labels.data<std::int64_t>()[i] = i % 3;
  if (one_nan) images.data<float>()[17 * 16 + 5] = std::numeric_limits<float>::quiet_NaN();
  return std::make_shared<data::TensorDataset>(images, labels, 3);
}

std::shared_ptr<nn::Module> model() {
  manual_seed(11);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(16, 8));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Linear>(8, 3));
  return m;
}

// With a BatchNorm, whose running statistics DDP broadcasts from rank 0
// before each training forward.
std::shared_ptr<nn::Module> model_with_buffers() {
  manual_seed(13);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::BatchNorm2d>(1));
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(16, 3));
  return m;
}

struct RankRun {
  std::shared_ptr<nn::Module> model;
  train::History history;
  train::EvalResult test;
};

// One rank's fit and evaluate of `net`: batch `batch` on its shard, SGD
// with momentum. The model and the data are made beforehand, on one thread:
// they draw from the global generator, which concurrent ranks would
// interleave.
// `gradients`, when given, is FitOptions::gradient_group, and `device` the
// device to train on.
RankRun train_rank(std::shared_ptr<dist::ProcessGroup> group, std::shared_ptr<nn::Module> net,
                   std::shared_ptr<const data::Dataset> data, std::int64_t batch, train::NonFinite nonfinite,
                   bool profile = false, std::shared_ptr<dist::ProcessGroup> gradients = nullptr,
                   Device device = kCPU) {
  const int rank = group ? group->rank() : 0, ranks = group ? group->size() : 1;
  RankRun run{std::move(net), {}, {}};
  optim::SGD opt(run.model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  data::DataLoaderOptions train_opts;
  train_opts.batch_size = batch;
  train_opts.seed = 3;
  train_opts.shard = data::Shard{rank, ranks, data::ShardPadding::repeat};
  data::DataLoader train_loader(data, train_opts);
  data::DataLoaderOptions test_opts = train_opts;
  test_opts.shuffle = false;
  test_opts.shard.padding = data::ShardPadding::none;
  data::DataLoader test_loader(data, test_opts);
  train::FitOptions fit;
  fit.epochs = 2;
  fit.progress = train::ProgressMode::none;
  fit.nonfinite = nonfinite;
  fit.process_group = group;
  fit.profile = profile;
  fit.gradient_group = gradients;
  fit.device = device;
  fit.validation = &test_loader;
  run.history = train::fit(*run.model, opt, train_loader, fit);
  train::EvaluateOptions eval;
  eval.process_group = group;
  eval.device = device;
  run.test = train::evaluate(*run.model, test_loader, eval);
  return run;
}

double max_difference(const nn::Module& a, const nn::Module& b) {
  const auto pa = a.parameters(), pb = b.parameters();
  double worst = 0;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    const auto x = pa[i].to(kCPU).to_vector<float>(), y = pb[i].to(kCPU).to_vector<float>();
    for (std::size_t j = 0; j < x.size(); ++j) worst = std::max(worst, double(std::abs(x[j] - y[j])));
  }
  return worst;
}

// Every parameter and buffer, in registration order.
std::vector<std::vector<float>> state_values(const nn::Module& m) {
  std::vector<std::vector<float>> out;
  for (const Tensor& t : m.parameters()) out.push_back(t.to_vector<float>());
  for (const Tensor& t : m.buffers()) out.push_back(t.to_vector<float>());
  return out;
}

// 52 examples on 2 ranks split evenly, so padding repeats nothing and the
// job's steps are one rank's steps at twice the batch.
TEST(FitOnRanks, TwoRanksTrainAndReportAsOneRankWithTwiceTheBatch) {
  const auto data = dataset(false);
  const RankRun one = train_rank(nullptr, model(), data, 8, train::NonFinite::error);
  const std::vector<std::shared_ptr<nn::Module>> nets{model(), model()};
  ThreadGroups groups(2);
  std::vector<RankRun> ranks(2);
  groups.run([&](int rank) {
    const auto r = static_cast<std::size_t>(rank);
    ranks[r] = train_rank(groups.group(rank), nets[r], data, 4, train::NonFinite::error);
  });
  EXPECT_FALSE(groups.mismatched());
  for (const RankRun& r : ranks) {
    EXPECT_LT(max_difference(*r.model, *one.model), 1e-5);
    ASSERT_EQ(r.history.epochs.size(), 2u);
    for (std::size_t e = 0; e < 2; ++e) {
      // The epoch's metrics and validation cover every rank's examples.
      EXPECT_NEAR(r.history.epochs[e].at("loss"), one.history.epochs[e].at("loss"), 1e-5);
      EXPECT_NEAR(r.history.epochs[e].at("accuracy"), one.history.epochs[e].at("accuracy"), 1e-12);
      EXPECT_NEAR(r.history.epochs[e].at("val_loss"), one.history.epochs[e].at("val_loss"), 1e-5);
    }
    EXPECT_EQ(r.test.examples, kExamples);  // each test example once
    EXPECT_NEAR(r.test.loss, one.test.loss, 1e-5);
    EXPECT_NEAR(r.test.accuracy, one.test.accuracy, 1e-12);
  }
}

// The same on sim with the gradients over a device group (the emulation of
// NCCL), while the step agreement and the metrics go over the thread group,
// as `convkit train` splits them on cuda under mpirun.
TEST(FitOnRanks, GradientsOverADeviceGroupTrainAsOneRank) {
  CONVKIT_SKIP_SIM_THREAD_RANKS_IF_UNSUPPORTED();
  const auto data = dataset(false);
  const RankRun one = train_rank(nullptr, model(), data, 8, train::NonFinite::error, false, nullptr, kSim);
  const std::vector<std::shared_ptr<nn::Module>> nets{model(), model()};
  ThreadGroups groups(2);
  std::vector<RankRun> ranks(2);
  groups.run([&](int rank) {
    const auto r = static_cast<std::size_t>(rank);
    auto gradients = dist::device_group(kSim, groups.group(rank));
    ranks[r] = train_rank(groups.group(rank), nets[r], data, 4, train::NonFinite::error, false, gradients, kSim);
  });
  EXPECT_FALSE(groups.mismatched());
  for (const RankRun& r : ranks) {
    EXPECT_LT(max_difference(*r.model, *one.model), 1e-5);
    EXPECT_EQ(r.test.examples, kExamples);
    EXPECT_NEAR(r.test.loss, one.test.loss, 1e-5);
  }
}

// Example 17 holds a NaN, so the step that reads it has a non-finite loss on
// one rank only. Every rank must skip that step (the averaged gradient would
// carry the NaN to all), and the replicas stay equal and finite.
TEST(FitOnRanks, ANonFiniteStepOnOneRankIsSkippedOnEvery) {
  const auto data = dataset(true);
  const std::vector<std::shared_ptr<nn::Module>> nets{model(), model()};
  ThreadGroups groups(2);
  std::vector<RankRun> ranks(2);
  groups.run([&](int rank) {
    const auto r = static_cast<std::size_t>(rank);
    ranks[r] = train_rank(groups.group(rank), nets[r], data, 4, train::NonFinite::skip_step);
  });
  EXPECT_FALSE(groups.mismatched());
  EXPECT_EQ(ranks[0].history.skipped_steps, 2);  // one per epoch
  EXPECT_EQ(ranks[1].history.skipped_steps, 2);
  EXPECT_EQ(max_difference(*ranks[0].model, *ranks[1].model), 0.0);
  for (const Tensor& p : ranks[0].model->parameters())
    for (float v : p.to_vector<float>()) ASSERT_TRUE(std::isfinite(v));
}

// With NonFinite::error every rank stops with an error at that same step
// (the averaged gradient carries the NaN to every rank), and none waits for
// the others in a collective that will never come.
TEST(FitOnRanks, ANonFiniteStepOnOneRankStopsEveryRankWithAnError) {
  const auto data = dataset(true);
  const std::vector<std::shared_ptr<nn::Module>> nets{model(), model()};
  ThreadGroups groups(2);
  std::vector<std::string> errors(2);
  groups.run([&](int rank) {
    try {
      train_rank(groups.group(rank), nets[static_cast<std::size_t>(rank)], data, 4, train::NonFinite::error);
    } catch (const Error& e) {
      errors[static_cast<std::size_t>(rank)] = e.what();
    }
  });
  EXPECT_FALSE(groups.mismatched());
  const auto where = [](const std::string& e) { return e.substr(0, e.find(':', e.find("step "))); };
  ASSERT_NE(errors[0].find("fit: epoch 1, step "), std::string::npos) << errors[0];
  EXPECT_EQ(where(errors[0]), where(errors[1])) << errors[0] << "\n" << errors[1];
}

// A signal reaches one rank: every rank must stop after the same step, and
// a non-finite step on one rank is one on every rank.
TEST(FitOnRanks, RanksAgreeOnStoppingAndOnNonFiniteSteps) {
  ThreadGroups groups(3);
  std::vector<train::detail::StepVerdict> verdicts(3);
  groups.run([&](int rank) {
    verdicts[static_cast<std::size_t>(rank)] =
        train::detail::agree_on_step(groups.group(rank).get(), /*nonfinite=*/rank == 2, /*stop=*/rank == 1);
  });
  for (const auto& v : verdicts) {
    EXPECT_TRUE(v.any_nonfinite);
    EXPECT_TRUE(v.any_stop);
  }
  groups.run([&](int rank) {
    verdicts[static_cast<std::size_t>(rank)] = train::detail::agree_on_step(groups.group(rank).get(), false, false);
  });
  for (const auto& v : verdicts) EXPECT_FALSE(v.any_nonfinite || v.any_stop);
  // Alone, a rank keeps its own view.
  const auto alone = train::detail::agree_on_step(nullptr, true, false);
  EXPECT_TRUE(alone.any_nonfinite);
  EXPECT_FALSE(alone.any_stop);
}

}  // namespace
}  // namespace convkit::testing

namespace convkit::testing {
namespace {

// The layer profiler runs the model's layers itself, past DDP's forward; the
// step must still be DDP's, buffers broadcast from rank 0 included, so each
// rank ends with the same bits as without the profiler.
TEST(FitOnRanks, ProfilingARankChangesNothingItTrains) {
  const auto data = dataset(false);
  std::vector<std::vector<std::vector<float>>> plain(2), profiled(2);
  for (const bool profile : {false, true}) {
    const std::vector<std::shared_ptr<nn::Module>> nets{model_with_buffers(), model_with_buffers()};
    ThreadGroups groups(2);
    std::vector<RankRun> ranks(2);
    groups.run([&](int rank) {
      const auto r = static_cast<std::size_t>(rank);
      ranks[r] = train_rank(groups.group(rank), nets[r], data, 4, train::NonFinite::error, profile);
    });
    EXPECT_FALSE(groups.mismatched());
    for (std::size_t r = 0; r < 2; ++r) {
      (profile ? profiled : plain)[r] = state_values(*ranks[r].model);
      EXPECT_EQ(ranks[r].history.profile.has_value(), profile);
    }
  }
  for (std::size_t r = 0; r < 2; ++r) EXPECT_EQ(profiled[r], plain[r]) << "rank " << r;
}

}  // namespace
}  // namespace convkit::testing
