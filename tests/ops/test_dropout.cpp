// Dropout: the mask is exactly the Philox formula element by element, the
// keep rate matches 1 - p, a seed reproduces the mask, eval and p = 0 are the
// identity, p = 1 zeroes everything, and the gradient is the scaled mask.
#include <cmath>

#include "ops/ops_testing.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::opts;
using testing::random_tensor;

// Inputs in [0.5, 1.5]: never zero, so y / x recovers the multiplier.
Tensor positive_input(const Shape& s, std::mt19937_64& rng, TensorOptions o) {
  return random_tensor(s, rng, o, 0.5, 1.5);
}

class Dropout : public ::testing::TestWithParam<Device> {};

TEST_P(Dropout, MaskIsThePhiloxFormula) {
  std::mt19937_64 rng(testing::kSeed + 300);
  for (DType dt : {DType::float32, DType::float64}) {
    for (double p : {0.1, 0.5, 0.9, 1.0 / 3}) {
      manual_seed(1234);
      (void)rand({5}, opts(dt, GetParam()));  // advance the generator, so the offset is not 0
      const Tensor x = positive_input({3, 7, 5}, rng, opts(dt, GetParam()));
      const std::uint64_t seed = default_generator().seed, offset = default_generator().offset;
      const Tensor y = dropout(testing::noncontiguous(x), p, true);
      EXPECT_EQ(default_generator().offset, offset + 108);  // 105 elements, rounded up to whole blocks
      const auto xv = x.to_vector<double>();
      std::vector<double> want;
      for (std::size_t i = 0; i < xv.size(); ++i) {
        const bool keep = philox::uniform(seed, offset, i) >= p;
        want.push_back(keep ? xv[i] / (1 - p) : 0.0);
      }
      EXPECT_TRUE(all_close(y, want, testing::tol_for(dt), testing::tol_for(dt))) << "p " << p;
    }
  }
}

TEST_P(Dropout, KeepRateMatches) {
  manual_seed(99);
  const Tensor x = ones({200000}, GetParam());
  for (double p : {0.2, 0.5, 0.75}) {
    const auto y = dropout(x, p, true).to_vector<double>();
    double kept = 0;
    for (double v : y) {
      if (v != 0) {
        ++kept;
        ASSERT_NEAR(v, 1 / (1 - p), 1e-6);
      }
    }
    // 5 standard deviations of the binomial keep fraction.
    const double sd = std::sqrt(p * (1 - p) / static_cast<double>(y.size()));
    EXPECT_NEAR(kept / static_cast<double>(y.size()), 1 - p, 5 * sd) << "p " << p;
  }
}

TEST_P(Dropout, SameSeedSameMaskAndNextDrawDiffers) {
  std::mt19937_64 rng(testing::kSeed + 302);
  const Tensor x = positive_input({4, 9}, rng, opts(DType::float32, GetParam()));
  manual_seed(7);
  const auto a = dropout(x, 0.5, true).to_vector<double>();
  const auto b = dropout(x, 0.5, true).to_vector<double>();
  manual_seed(7);
  const auto c = dropout(x, 0.5, true).to_vector<double>();
  EXPECT_EQ(a, c);
  EXPECT_NE(a, b);
  manual_seed(8);
  EXPECT_NE(dropout(x, 0.5, true).to_vector<double>(), a);
}

TEST_P(Dropout, EvalAndZeroPAreIdentityAndOneGivesZeros) {
  std::mt19937_64 rng(testing::kSeed + 303);
  const Tensor x = positive_input({3, 4}, rng, opts(DType::float64, GetParam()));
  const std::uint64_t offset = default_generator().offset;
  EXPECT_TRUE(dropout(x, 0.5, false).same(x));
  EXPECT_TRUE(dropout(x, 0.0, true).same(x));
  EXPECT_EQ(default_generator().offset, offset);  // no draw
  EXPECT_TRUE(all_close(dropout(x, 1.0, true), std::vector<double>(12, 0.0), 0, 0));

  Tensor xg = x.clone().requires_grad_();
  dropout(xg, 1.0, true).sum().backward();
  EXPECT_TRUE(all_close(xg.grad(), std::vector<double>(12, 0.0), 0, 0));
}

TEST_P(Dropout, GradientIsTheScaledMask) {
  std::mt19937_64 rng(testing::kSeed + 304);
  for (DType dt : {DType::float32, DType::float64}) {
    const double p = 0.4;
    Tensor x = positive_input({5, 6}, rng, opts(dt, GetParam()).requires_grad());
    const Tensor g = random_tensor({5, 6}, rng, opts(dt, GetParam()));
    const std::uint64_t seed = default_generator().seed, offset = default_generator().offset;
    dropout(x, p, true).backward(g);
    const auto gv = g.to_vector<double>();
    std::vector<double> want;
    for (std::size_t i = 0; i < gv.size(); ++i)
      want.push_back(philox::uniform(seed, offset, i) >= p ? gv[i] / (1 - p) : 0.0);
    EXPECT_TRUE(all_close(x.grad(), want, testing::tol_for(dt), testing::tol_for(dt)));
  }
}

// The backward draws the mask again from (seed, offset), even after the
// generator has moved on or been reseeded, and the graph holds no mask: a
// recorded dropout keeps only its output alive.
TEST_P(Dropout, BackwardRegeneratesTheMaskAndNothingIsSaved) {
  std::mt19937_64 rng(testing::kSeed + 306);
  for (DType dt : {DType::float32, DType::float64}) {
    const double p = 0.3;
    Tensor x = positive_input({37, 11}, rng, opts(dt, GetParam()).requires_grad());
    const DeviceType type = GetParam().type;
    const std::size_t before = memory_allocated(type);
    Tensor y = dropout(x, p, true);
    EXPECT_EQ(memory_allocated(type) - before, static_cast<std::size_t>(y.numel()) * dtype_size(dt))
        << "the graph holds a mask beside the output";
    manual_seed(12345);  // moves the generator; the backward must not depend on it
    (void)rand({9}, opts(dt, GetParam()));
    y.backward(ones_like(y));
    // d y / d x is y / x elementwise: the forward's mask.
    EXPECT_TRUE(all_close(x.grad(), div(y.detach(), x.detach()).to_vector<double>(), testing::tol_for(dt),
                          testing::tol_for(dt)));
  }
}

TEST_P(Dropout, GradcheckWithAFixedSeed) {
  std::mt19937_64 rng(testing::kSeed + 305);
  const Tensor x = random_tensor({4, 5}, rng, opts(DType::float64, GetParam()).requires_grad());
  // Reseeding inside the function gives every finite-difference forward the same mask.
  EXPECT_TRUE(testing::grad_ok([](const auto& in) {
    manual_seed(5);
    return dropout(in[0], 0.3, true);
  }, {x}));
}

TEST_P(Dropout, BadProbabilityIsAClearError) {
  const Tensor x = ones({3}, GetParam());
  EXPECT_TRUE(testing::throws_with([&] { dropout(x, 1.5, true); }, {"dropout", "1.5"}));
  EXPECT_TRUE(testing::throws_with([&] { dropout(x, -0.1, false); }, {"dropout", "-0.1"}));
}

INSTANTIATE_TEST_SUITE_P(Devices, Dropout, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
