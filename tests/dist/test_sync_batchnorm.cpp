// SyncBatchNorm: BatchNorm with statistics summed over the ranks. One rank
// must give BatchNorm's results; two mirrored ranks must give BatchNorm's
// over both batches; gradients must pass gradcheck through the reduction.
#include <memory>
#include <string>
#include <vector>

#include <convkit/dist/sync_batchnorm.h>

#include "fake_groups.h"
#include "support/support.h"

namespace convkit::testing {
namespace {

TensorOptions f64() { return TensorOptions().dtype(DType::float64); }

double max_abs(const Tensor& a, const Tensor& b) { return max((a - b).abs()).item(); }

// A BatchNorm2d(3) in float64 with non-trivial affine parameters.
std::shared_ptr<nn::BatchNorm2d> bn2d(std::uint64_t seed) {
  manual_seed(seed);
  auto bn = std::make_shared<nn::BatchNorm2d>(3);
  bn->to(DType::float64);
  NoGradGuard no_grad;
  bn->weight.copy_(rand({3}, f64()) + 0.5);
  bn->bias.copy_(randn({3}, f64()));
  return bn;
}

TEST(SyncBatchNorm, ConvertReachesEveryBatchNorm) {
  auto net = nn::resnet18_cifar();
  const std::size_t n = dist::convert_sync_batchnorm(*net, std::make_shared<MirroredGroup>(1));
  std::size_t seen = 0;
  net->apply([&](nn::Module& m) {
    if (auto* bn = dynamic_cast<nn::BatchNormBase*>(&m)) {
      EXPECT_TRUE(bn->stats_reducer() != nullptr);
      ++seen;
    }
  });
  EXPECT_EQ(n, seen);
  EXPECT_GT(n, 10u);
}

TEST(SyncBatchNorm, OneRankGivesBatchNormsValuesGradientsAndRunningStatistics) {
  for (const bool relu : {false, true}) {
    auto plain = bn2d(3), synced = bn2d(3);
    dist::convert_sync_batchnorm(*synced, std::make_shared<MirroredGroup>(1));
    manual_seed(4);
    const Tensor x = randn({4, 3, 5, 2}, f64()) * 2.0 + 1.0;
    const Tensor v = randn({4, 3, 5, 2}, f64());
    Tensor xa = x.clone().requires_grad_(), xb = x.clone().requires_grad_();
    const Tensor ya = relu ? plain->forward_relu(xa) : plain->forward(xa);
    const Tensor yb = relu ? synced->forward_relu(xb) : synced->forward(xb);
    EXPECT_LT(max_abs(ya, yb), 1e-12);
    sum(ya * v).backward();
    sum(yb * v).backward();
    EXPECT_LT(max_abs(xa.grad(), xb.grad()), 1e-12);
    EXPECT_LT(max_abs(plain->weight.grad(), synced->weight.grad()), 1e-12);
    EXPECT_LT(max_abs(plain->bias.grad(), synced->bias.grad()), 1e-12);
    EXPECT_LT(max_abs(plain->running_mean, synced->running_mean), 1e-12);
    EXPECT_LT(max_abs(plain->running_var, synced->running_var), 1e-12);
    EXPECT_EQ(synced->num_batches_tracked.item(), 1.0);
  }
}

TEST(SyncBatchNorm, TwoMirroredRanksNormaliseOverBothBatches) {
  // Both ranks hold x: the statistics are those of [x; x], and rank 0's input
  // gradient is that of plain BatchNorm over [x; x] with the loss of both halves.
  auto plain = bn2d(5), synced = bn2d(5);
  auto group = std::make_shared<MirroredGroup>(2);
  dist::convert_sync_batchnorm(*synced, group);
  manual_seed(6);
  const Tensor x = randn({3, 3, 2, 2}, f64());
  const Tensor v = randn({3, 3, 2, 2}, f64());
  Tensor both = cat({x, x}, 0).requires_grad_();
  Tensor mine = x.clone().requires_grad_();
  const Tensor y_both = plain->forward(both);
  const Tensor y_mine = synced->forward(mine);
  EXPECT_LT(max_abs(y_both.narrow(0, 0, 3), y_mine), 1e-12);
  EXPECT_EQ(*group->log(), (std::vector<std::string>{"allreduce 4", "allreduce 3"}));
  sum(y_both * cat({v, v}, 0)).backward();
  sum(y_mine * v).backward();
  EXPECT_EQ(group->log()->size(), 4u);  // and two more in backward
  EXPECT_LT(max_abs(both.grad().narrow(0, 0, 3), mine.grad()), 1e-12);
  // Parameter gradients stay per rank (DistributedDataParallel sums them).
  EXPECT_LT(max_abs(plain->weight.grad(), synced->weight.grad() * 2.0), 1e-12);
  // The running variance is the unbiased one of all 24 values per channel.
  EXPECT_LT(max_abs(plain->running_var, synced->running_var), 1e-12);
  EXPECT_LT(max_abs(plain->running_mean, synced->running_mean), 1e-12);
}

TEST(SyncBatchNorm, GradcheckThroughTheReduction) {
  for (const int ranks : {1, 2}) {
    auto bn = bn2d(8);
    dist::convert_sync_batchnorm(*bn, std::make_shared<MirroredGroup>(ranks));
    manual_seed(9);
    const Tensor x = randn({2, 3, 2, 3}, f64()).requires_grad_();
    const Tensor r = randn({2, 3, 2, 3}, f64()).requires_grad_();
    // gradcheck passes copies of its inputs: the affine parameters are
    // swapped in for the call (forward reads the members).
    const Tensor weight = bn->weight, bias = bn->bias;
    const auto plain_fn = [&](const std::vector<Tensor>& in) {
      bn->weight = in[1];
      bn->bias = in[2];
      return bn->forward(in[0]);
    };
    const auto add_relu_fn = [&](const std::vector<Tensor>& in) { return bn->forward_add_relu(in[0], in[1]); };
    const auto result = autograd::gradcheck(plain_fn, {x, bn->weight, bn->bias});
    EXPECT_TRUE(result.ok) << ranks << " ranks: " << result.message;
    bn->weight = weight;
    bn->bias = bias;
    const auto fused = autograd::gradcheck(add_relu_fn, {x, r});
    EXPECT_TRUE(fused.ok) << ranks << " ranks, add+relu: " << fused.message;
  }
}

TEST(SyncBatchNorm, BatchNorm1dWithLength) {
  manual_seed(10);
  auto plain = std::make_shared<nn::BatchNorm1d>(2), synced = std::make_shared<nn::BatchNorm1d>(2);
  plain->to(DType::float64);
  synced->to(DType::float64);
  dist::convert_sync_batchnorm(*synced, std::make_shared<MirroredGroup>(1));
  for (const Shape& s : {Shape{5, 2}, Shape{3, 2, 4}}) {
    const Tensor x = randn(s, f64());
    EXPECT_LT(max_abs(plain->forward(x), synced->forward(x)), 1e-12) << s;
  }
}

TEST(SyncBatchNorm, ResNetBlockFallsBackFromTheFusedOps) {
  // BasicBlock ends in batch_norm_add_relu and starts with batch_norm_relu;
  // synchronised, both must run the unfused path with the same results.
  const auto block = [](std::shared_ptr<dist::ProcessGroup> group) {
    manual_seed(11);
    auto b = std::make_shared<nn::BasicBlock>(3, 3);
    b->to(DType::float64);
    if (group) dist::convert_sync_batchnorm(*b, group);
    return b;
  };
  auto plain = block(nullptr);
  auto group = std::make_shared<MirroredGroup>(1);
  auto synced = block(group);
  manual_seed(12);
  const Tensor x = randn({2, 3, 4, 4}, f64());
  Tensor xa = x.clone().requires_grad_(), xb = x.clone().requires_grad_();
  const Tensor ya = plain->forward(xa), yb = synced->forward(xb);
  EXPECT_LT(max_abs(ya, yb), 1e-10);
  sum(ya * ya).backward();
  sum(yb * yb).backward();
  EXPECT_LT(max_abs(xa.grad(), xb.grad()), 1e-10);
  const auto pa = plain->parameters(), pb = synced->parameters();
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_LT(max_abs(pa[i].grad(), pb[i].grad()), 1e-10) << i;
  // And with two ranks both layers communicate: two sums each in forward.
  auto mirrored = std::make_shared<MirroredGroup>(2);
  block(mirrored)->forward(x);
  EXPECT_EQ(mirrored->log()->size(), 4u);
}

TEST(SyncBatchNorm, EvalModeCommunicatesNothing) {
  auto bn = bn2d(13);
  auto group = std::make_shared<MirroredGroup>(2);
  dist::convert_sync_batchnorm(*bn, group);
  bn->eval();
  const Tensor x = randn({2, 3, 2, 2}, f64());
  auto plain = bn2d(13);
  plain->eval();
  EXPECT_LT(max_abs(bn->forward(x), plain->forward(x)), 1e-12);
  EXPECT_TRUE(group->log()->empty());
}

TEST(SyncBatchNorm, OneValuePerChannelOverAllRanksIsAnError) {
  auto bn = bn2d(14);
  dist::convert_sync_batchnorm(*bn, std::make_shared<MirroredGroup>(1));
  try {
    bn->forward(randn({1, 3, 1, 1}, f64()));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 1 value per channel over all ranks"), std::string::npos)
        << e.what();
  }
  // Two ranks of one value each are enough.
  dist::convert_sync_batchnorm(*bn, std::make_shared<MirroredGroup>(2));
  EXPECT_NO_THROW(bn->forward(randn({1, 3, 1, 1}, f64())));
}

}  // namespace
}  // namespace convkit::testing
