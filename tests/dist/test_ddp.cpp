// DistributedDataParallel on in-process ranks: the mirrored group checks
// the collectives one rank issues (order, buckets, overlap), the thread
// groups run real multi-rank jobs and check they train as one rank with the
// whole batch.
#include <algorithm>
#include <string>
#include <vector>

#include <convkit/dist/distributed_data_parallel.h>
#include <convkit/dist/sync_batchnorm.h>

#include "ddp_test_models.h"
#include "fake_groups.h"
#include "support/support.h"

namespace convkit::testing {
namespace {

using dist::DistributedDataParallel;
using dist::DistributedDataParallelOptions;

// Bucket caps in MiB that hold a given number of float32 elements.
double cap_for_floats(double n) { return n * 4.0 / (1024.0 * 1024.0); }

TEST(DistributedDataParallel, OneRankCommunicatesNothingAndKeepsGradients) {
  auto group = std::make_shared<MirroredGroup>(1);
  auto model = small_conv_net(1, false);
  auto reference = small_conv_net(1, false);
  DistributedDataParallel ddp(model, group);
  EXPECT_TRUE(ddp.bucket_parameter_names().empty());
  const auto batches = training_batches(2, 4);
  train_sgd(ddp, batches);
  train_sgd(*reference, batches);
  EXPECT_TRUE(group->log()->empty());
  EXPECT_EQ(max_state_difference(*model, *reference), 0.0);
}

TEST(DistributedDataParallel, RegistersTheModuleAsAChild) {
  auto model = small_conv_net(1, true);
  DistributedDataParallel ddp(model, std::make_shared<MirroredGroup>(2));
  EXPECT_TRUE(ddp.module() == model);
  const StateDict named = ddp.named_parameters();
  ASSERT_FALSE(named.empty());
  EXPECT_EQ(named[0].first, "module.0.weight");
  EXPECT_EQ(ddp.parameters().size(), model->parameters().size());
  ddp.eval();
  EXPECT_FALSE(model->is_training());
}

TEST(DistributedDataParallel, BroadcastsParametersAndBuffersAtConstruction) {
  auto group = std::make_shared<MirroredGroup>(2);
  auto model = small_conv_net(1, true);
  DistributedDataParallel ddp(model, group);
  // Parameters 72 + 4 (conv), 4 + 4 (bn), 300 + 3 (linear) and two [4]
  // float32 buffers in one; the int64 counter travels in the float64 buffer.
  EXPECT_EQ(*group->log(), (std::vector<std::string>{"broadcast 395", "broadcast 1"}));
}

TEST(DistributedDataParallel, BucketsFollowReverseRegistrationOrderUpToTheCap) {
  auto model = small_conv_net(1, false);  // 0.weight [4,2,3,3]=72, 0.bias 4, 3.weight 300, 3.bias 3
  DistributedDataParallel ddp(model, std::make_shared<MirroredGroup>(2),
                              DistributedDataParallelOptions().bucket_cap_mb(cap_for_floats(300)));
  // A bucket closes once it holds at least the cap.
  EXPECT_EQ(ddp.bucket_parameter_names(),
            (std::vector<std::vector<std::string>>{{"3.bias", "3.weight"}, {"0.bias", "0.weight"}}));
  DistributedDataParallel one_bucket(small_conv_net(1, false), std::make_shared<MirroredGroup>(2));
  EXPECT_EQ(one_bucket.bucket_parameter_names().size(), 1u);
}

TEST(DistributedDataParallel, RejectsBadArguments) {
  auto group = std::make_shared<MirroredGroup>(2);
  EXPECT_THROW(DistributedDataParallel(nullptr, group), Error);
  EXPECT_THROW(DistributedDataParallel(small_conv_net(1, false), nullptr), Error);
  try {
    DistributedDataParallel(small_conv_net(1, false), group, DistributedDataParallelOptions().bucket_cap_mb(0));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bucket_cap_mb must be positive"), std::string::npos);
  }
}


TEST(DistributedDataParallel, BucketsAreIssuedInOrderDuringBackward) {
  auto group = std::make_shared<MirroredGroup>(2);
  auto model = small_conv_net(1, false);
  DistributedDataParallel ddp(model, group, DistributedDataParallelOptions().bucket_cap_mb(cap_for_floats(300)));
  const Batch b = training_batches(1, 4)[0];
  const Tensor loss = cross_entropy(ddp(b.x), b.y);
  std::vector<std::string>& log = *group->log();
  log.clear();
  LoggingObserver observer(log);
  autograd::BackwardObserver* previous = autograd::set_backward_observer(&observer);
  loss.backward();
  autograd::set_backward_observer(previous);

  std::vector<std::size_t> collectives, nodes;
  for (std::size_t i = 0; i < log.size(); ++i) (log[i].rfind("node", 0) == 0 ? nodes : collectives).push_back(i);
  // The linear layer's bucket (303 values), then the conv's (76).
  ASSERT_EQ(collectives.size(), 2u);
  EXPECT_EQ(log[collectives[0]], "allreduce 303");
  EXPECT_EQ(log[collectives[1]], "allreduce 76");
  // Overlap: the first bucket goes out while the conv's backward is still to run.
  EXPECT_LT(collectives[0], nodes.back());
  const auto conv_node = std::find_if(log.begin() + static_cast<std::ptrdiff_t>(collectives[0]), log.end(),
                                      [](const std::string& s) { return s.find("Conv") != std::string::npos; });
  EXPECT_NE(conv_node, log.end()) << "no convolution node ran after the first bucket";
  // The mirrored group sums 2 equal ranks; the mean is the local gradient.
  auto reference = small_conv_net(1, false);
  cross_entropy((*reference)(b.x), b.y).backward();
  const auto ours = model->parameters(), theirs = reference->parameters();
  for (std::size_t i = 0; i < ours.size(); ++i)
    EXPECT_LT(max((ours[i].grad() - theirs[i].grad()).abs()).item(), 1e-6);
}

TEST(DistributedDataParallel, AParameterWithoutGradientSendsZerosAndGetsTheMean) {
  // fc2 is registered but unused by this forward.
  struct TwoHeads : nn::Module {
    std::shared_ptr<nn::Linear> fc1, fc2;
    TwoHeads() : Module("TwoHeads") {
      fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 2));
      fc2 = register_module("fc2", std::make_shared<nn::Linear>(3, 2));
    }
    Tensor forward(const Tensor& x) override { return (*fc1)(x); }
  };
  auto group = std::make_shared<MirroredGroup>(2);
  auto model = std::make_shared<TwoHeads>();
  DistributedDataParallel ddp(model, group, DistributedDataParallelOptions().bucket_cap_mb(cap_for_floats(1)));
  ASSERT_EQ(ddp.bucket_parameter_names().size(), 4u);
  group->log()->clear();
  sum(ddp(ones({2, 3}))).backward();
  // fc2's buckets come first and never fill; fc1's wait behind them, and all
  // four go out at the end of backward, in order.
  EXPECT_EQ(*group->log(),
            (std::vector<std::string>{"allreduce 2", "allreduce 6", "allreduce 2", "allreduce 6"}));
  ASSERT_TRUE(model->fc2->weight.grad().defined());
  EXPECT_EQ(max(model->fc2->weight.grad().abs()).item(), 0.0);
  EXPECT_EQ(model->fc1->bias.grad().to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(DistributedDataParallel, FrozenParametersGetNoBucket) {
  auto model = small_conv_net(1, false);
  model->parameters()[0].requires_grad_(false);  // 0.weight
  DistributedDataParallel ddp(model, std::make_shared<MirroredGroup>(2));
  ASSERT_EQ(ddp.bucket_parameter_names().size(), 1u);
  EXPECT_EQ(ddp.bucket_parameter_names()[0], (std::vector<std::string>{"3.bias", "3.weight", "0.bias"}));
}

TEST(DistributedDataParallel, HooksGoWithTheWrapper) {
  auto group = std::make_shared<MirroredGroup>(2);
  auto model = small_conv_net(1, false);
  { DistributedDataParallel ddp(model, group); }
  group->log()->clear();
  const Batch b = training_batches(1, 4)[0];
  cross_entropy((*model)(b.x), b.y).backward();
  EXPECT_TRUE(group->log()->empty());
}

// N ranks with batch B / N each train as one rank with batch B.
void expect_ranks_match_one_rank(int ranks, bool batchnorm, bool sync_batchnorm, double tolerance) {
  const int steps = 4;
  const std::int64_t batch = 8;
  const auto batches = training_batches(steps, batch);
  auto reference = small_conv_net(7, batchnorm);
  train_sgd(*reference, batches);

  ThreadGroups groups(ranks);
  std::vector<std::shared_ptr<nn::Sequential>> models;
  // Different seeds: the broadcast at construction must make them equal.
  for (int r = 0; r < ranks; ++r) models.push_back(small_conv_net(r == 0 ? 7 : 100 + static_cast<std::uint64_t>(r), batchnorm));
  groups.run([&](int rank) {
    auto group = groups.group(rank);
    if (sync_batchnorm) {
      EXPECT_EQ(dist::convert_sync_batchnorm(*models[static_cast<std::size_t>(rank)], group), 1u);
    }
    // A small cap: several buckets, issued during backward.
    DistributedDataParallel ddp(models[static_cast<std::size_t>(rank)], group,
                                DistributedDataParallelOptions().bucket_cap_mb(cap_for_floats(50)));
    std::vector<Batch> mine;
    for (const Batch& b : batches) mine.push_back(shard(b, rank, ranks));
    train_sgd(ddp, mine);
  });
  EXPECT_FALSE(groups.mismatched());
  for (int r = 0; r < ranks; ++r)
    EXPECT_LT(max_state_difference(*models[static_cast<std::size_t>(r)], *reference), tolerance) << "rank " << r;
}

TEST(DistributedDataParallel, TwoRanksWithHalfBatchesMatchOneRank) {
  expect_ranks_match_one_rank(2, false, false, 1e-5);
}

TEST(DistributedDataParallel, FourRanksMatchOneRank) { expect_ranks_match_one_rank(4, false, false, 1e-5); }

TEST(DistributedDataParallel, SyncBatchNormRanksMatchOneRankWithBatchNorm) {
  expect_ranks_match_one_rank(2, true, true, 1e-5);
}

TEST(DistributedDataParallel, PerRankBatchNormDiffersFromOneRank) {
  // The check above can fail: without synchronised statistics each rank
  // normalises its half batch on its own, and the weights drift apart.
  const auto batches = training_batches(4, 8);
  auto reference = small_conv_net(7, true);
  train_sgd(*reference, batches);
  ThreadGroups groups(2);
  std::vector<std::shared_ptr<nn::Sequential>> models{small_conv_net(7, true), small_conv_net(7, true)};
  groups.run([&](int rank) {
    DistributedDataParallel ddp(models[static_cast<std::size_t>(rank)], groups.group(rank));
    std::vector<Batch> mine;
    for (const Batch& b : batches) mine.push_back(shard(b, rank, 2));
    train_sgd(ddp, mine);
  });
  EXPECT_GT(max_state_difference(*models[0], *reference), 1e-3);
  // Averaged gradients still keep the replicas' parameters identical.
  const auto p0 = models[0]->parameters(), p1 = models[1]->parameters();
  for (std::size_t i = 0; i < p0.size(); ++i) EXPECT_EQ(max((p0[i] - p1[i]).abs()).item(), 0.0) << i;
}

TEST(DistributedDataParallel, NoSyncAccumulatesLocallyThenAveragesTheTotal) {
  // Two micro-batches per rank: the first under NoSync, the second synced.
  const auto global = training_batches(1, 8)[0];
  auto reference = small_conv_net(7, false);
  cross_entropy((*reference)(global.x), global.y).backward();

  ThreadGroups groups(2);
  std::vector<std::shared_ptr<nn::Sequential>> models{small_conv_net(7, false), small_conv_net(7, false)};
  std::vector<std::string> log;
  groups.run([&](int rank) {
    DistributedDataParallel ddp(models[static_cast<std::size_t>(rank)], groups.group(rank));
    const Batch mine = shard(global, rank, 2);  // 4 samples, as two micro-batches of 2
    for (int micro = 0; micro < 2; ++micro) {
      const Tensor x = mine.x.narrow(0, 2 * micro, 2), y = mine.y.narrow(0, 2 * micro, 2);
      // Mean over the 8 samples: each micro-batch's mean counts 2 / 4 of the rank's.
      const auto pass = [&] { (cross_entropy(ddp(x), y) * 0.5).backward(); };
      if (micro == 0) {
        dist::NoSync no_sync(ddp);
        EXPECT_FALSE(ddp.gradient_sync());
        pass();
      } else {
        EXPECT_TRUE(ddp.gradient_sync());
        pass();
      }
    }
  });
  const auto want = reference->parameters();
  for (const auto& m : models) {
    const auto got = m->parameters();
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_LT(max((got[i].grad() - want[i].grad()).abs()).item(), 1e-6) << i;
  }
}

}  // namespace
}  // namespace convkit::testing
