// train::compute_loss and friends against float64 references, for softmax
// cross entropy and binary cross entropy with logits.
#include "support/support.h"

#include <cmath>

namespace convkit {
namespace {

using testing::all_close;
using train::LossKind;

TEST(TrainLoss, ResolvesByOutputWidth) {
  EXPECT_EQ(train::resolve_loss(LossKind::automatic, zeros({4, 10})), LossKind::cross_entropy);
  EXPECT_EQ(train::resolve_loss(LossKind::automatic, zeros({4, 1})), LossKind::binary_cross_entropy);
  EXPECT_EQ(train::resolve_loss(LossKind::automatic, zeros({4})), LossKind::binary_cross_entropy);
  EXPECT_EQ(train::num_classes_of(zeros({4, 1})), 2);
  EXPECT_EQ(train::num_classes_of(zeros({4, 7})), 7);
  EXPECT_THROW(train::resolve_loss(LossKind::cross_entropy, zeros({4, 1})), Error);
  EXPECT_THROW(train::resolve_loss(LossKind::binary_cross_entropy, zeros({4, 3})), Error);
  EXPECT_THROW(train::resolve_loss(LossKind::automatic, zeros({2, 3, 4})), Error);
  EXPECT_EQ(train::parse_loss_kind("binary_cross_entropy"), LossKind::binary_cross_entropy);
  EXPECT_THROW(train::parse_loss_kind("hinge"), Error);
}

TEST(TrainLoss, CrossEntropyMatchesReference) {
  std::mt19937_64 rng(testing::kSeed);
  const Tensor logits = testing::random_tensor({5, 3}, rng, DType::float64, -3, 3);
  const Tensor labels = from_vector(std::vector<std::int64_t>{0, 2, 1, 1, 0}, {5}, DType::int64);
  const auto x = logits.to_vector<double>();
  const auto y = labels.to_vector<std::int64_t>();
  double want = 0;
  for (int i = 0; i < 5; ++i) {
    double z = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(x[i * 3 + c]);
    want += std::log(z) - x[i * 3 + y[i]];
  }
  EXPECT_NEAR(train::compute_loss(LossKind::automatic, logits, labels).item(), want / 5, 1e-12);

  const auto classes = train::predicted_classes(LossKind::automatic, logits).to_vector<std::int64_t>();
  const Tensor probs = train::class_probabilities(LossKind::automatic, logits);
  for (int i = 0; i < 5; ++i) {
    int best = 0;
    for (int c = 1; c < 3; ++c)
      if (x[i * 3 + c] > x[i * 3 + best]) best = c;
    EXPECT_EQ(classes[i], best);
  }
  EXPECT_TRUE(all_close(sum(probs, {1}), std::vector<double>(5, 1.0), 1e-12, 0));
}

TEST(TrainLoss, BinaryCrossEntropyMatchesReference) {
  const Tensor logits = from_vector(std::vector<double>{-2.0, 0.5, 3.0, -0.1}, {4, 1}, DType::float64);
  const Tensor labels = from_vector(std::vector<std::int64_t>{0, 1, 0, 1}, {4}, DType::int64);
  const std::vector<double> x{-2.0, 0.5, 3.0, -0.1};
  const std::vector<double> t{0, 1, 0, 1};
  double want = 0;
  std::vector<double> probs_want;
  for (int i = 0; i < 4; ++i) {
    const double p = 1 / (1 + std::exp(-x[i]));
    want += -(t[i] * std::log(p) + (1 - t[i]) * std::log(1 - p));
    probs_want.push_back(1 - p);
    probs_want.push_back(p);
  }
  EXPECT_NEAR(train::compute_loss(LossKind::automatic, logits, labels).item(), want / 4, 1e-12);
  EXPECT_EQ(train::predicted_classes(LossKind::automatic, logits).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 1, 1, 0}));
  const Tensor probs = train::class_probabilities(LossKind::automatic, logits);
  EXPECT_EQ(probs.shape(), (Shape{4, 2}));
  EXPECT_TRUE(all_close(probs, probs_want, 1e-12, 0));
}

TEST(TrainLoss, GradientFlowsToLogits) {
  std::mt19937_64 rng(testing::kSeed + 1);
  const Tensor labels = from_vector(std::vector<std::int64_t>{1, 0, 2}, {3}, DType::int64);
  EXPECT_TRUE(testing::grad_ok(
      [&](const std::vector<Tensor>& in) { return train::compute_loss(LossKind::automatic, in[0], labels); },
      {testing::random_tensor({3, 3}, rng, DType::float64).requires_grad_()}));
  const Tensor binary = from_vector(std::vector<std::int64_t>{1, 0, 1}, {3}, DType::int64);
  EXPECT_TRUE(testing::grad_ok(
      [&](const std::vector<Tensor>& in) { return train::compute_loss(LossKind::automatic, in[0], binary); },
      {testing::random_tensor({3, 1}, rng, DType::float64).requires_grad_()}));
}

TEST(TrainLoss, BadLabelsAreErrors) {
  const Tensor logits = zeros({4, 3});
  EXPECT_THROW(train::compute_loss(LossKind::automatic, logits, zeros({4})), Error);  // float labels
  EXPECT_THROW(train::compute_loss(LossKind::automatic, logits, zeros({3}, DType::int64)), Error);
}

}  // namespace
}  // namespace convkit
