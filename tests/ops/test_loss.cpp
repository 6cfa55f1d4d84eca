// Losses against float64 references (label smoothing, every reduction, huge
// logits), by gradcheck, and bad targets giving errors that name the problem.
#include <cmath>
#include <limits>

#include "ops/ops_testing.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::opts;
using testing::random_tensor;

Tensor class_indices(const std::vector<std::int64_t>& values, const Shape& shape, Device d) {
  return from_vector(values, shape, TensorOptions(DType::int64).device(d));
}

Tensor random_targets(std::int64_t n, std::int64_t classes, std::mt19937_64& rng, Device d) {
  std::uniform_int_distribution<std::int64_t> dist(0, classes - 1);
  std::vector<std::int64_t> t(static_cast<std::size_t>(n));
  for (auto& e : t) e = dist(rng);
  return class_indices(t, {n}, d);
}

// Per-sample cross-entropy with label smoothing s, straight from the definition.
std::vector<double> ref_cross_entropy(const std::vector<double>& x, const std::vector<std::int64_t>& t,
                                      std::int64_t C, double s) {
  std::vector<double> out;
  for (std::size_t n = 0; n < t.size(); ++n) {
    const double* row = x.data() + n * static_cast<std::size_t>(C);
    const double mx = *std::max_element(row, row + C);
    double sum = 0;
    for (std::int64_t c = 0; c < C; ++c) sum += std::exp(row[c] - mx);
    const double lse = mx + std::log(sum);
    double loss = 0;
    for (std::int64_t c = 0; c < C; ++c) {
      const double q = (c == t[n] ? 1 - s : 0) + s / static_cast<double>(C);
      loss -= q * (row[c] - lse);
    }
    out.push_back(loss);
  }
  return out;
}

std::vector<double> reduced(const std::vector<double>& v, Reduction r) {
  if (r == Reduction::none) return v;
  double s = 0;
  for (double e : v) s += e;
  return {r == Reduction::sum ? s : s / static_cast<double>(v.size())};
}

const Reduction kReductions[] = {Reduction::mean, Reduction::sum, Reduction::none};

class Loss : public ::testing::TestWithParam<Device> {};

TEST_P(Loss, CrossEntropyMatchesReference) {
  std::mt19937_64 rng(testing::kSeed + 500);
  for (DType dt : {DType::float32, DType::float64}) {
    for (auto [N, C] : {std::pair<std::int64_t, std::int64_t>{1, 5}, {7, 3}, {16, 10}, {3, 1}}) {
      for (bool huge : {false, true}) {
        const Tensor x = random_tensor({N, C}, rng, opts(dt, GetParam()), huge ? -500 : -3, huge ? 500 : 3);
        const Tensor t = random_targets(N, C, rng, GetParam());
        for (double s : {0.0, 0.1, 0.5, 1.0}) {
          const auto per = ref_cross_entropy(x.to_vector<double>(), t.to_vector<std::int64_t>(), C, s);
          for (Reduction r : kReductions) {
            const double tol = dt == DType::float32 ? (huge ? 1e-4 : 2e-5) : 1e-11;
            const Tensor input = N > 1 ? testing::noncontiguous(x) : x;
            EXPECT_TRUE(all_close(cross_entropy(input, t, s, r), reduced(per, r), tol, tol))
                << "N " << N << " C " << C << " smoothing " << s;
          }
        }
      }
    }
  }
  // Defaults: no smoothing, mean.
  const Tensor x = from_vector(std::vector<double>{1, 2, 3, 0, 0, 0}, {2, 3}, opts(DType::float64, GetParam()));
  const Tensor t = class_indices({2, 0}, {2}, GetParam());
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3, l1 = std::log(3.0);
  EXPECT_NEAR(cross_entropy(x, t).item(), (l0 + l1) / 2, 1e-14);
}

TEST_P(Loss, CrossEntropyGradients) {
  std::mt19937_64 rng(testing::kSeed + 501);
  const Tensor x = random_tensor({6, 4}, rng, opts(DType::float64, GetParam()).requires_grad(), -2, 2);
  const Tensor t = random_targets(6, 4, rng, GetParam());
  for (double s : {0.0, 0.2})
    for (Reduction r : kReductions)
      EXPECT_TRUE(grad_ok([&](const auto& in) { return cross_entropy(in[0], t, s, r); }, {x})) << s;
  EXPECT_TRUE(grad_ok([&](const auto& in) { return cross_entropy(in[0].t().t(), t); }, {x}));
  // The fused op equals the composite log_softmax + nll_loss, values and gradients.
  EXPECT_NEAR(cross_entropy(x, t).item(), nll_loss(log_softmax(x, 1), t).item(), 1e-12);
}

TEST_P(Loss, NllLossMatchesReference) {
  std::mt19937_64 rng(testing::kSeed + 502);
  for (DType dt : {DType::float32, DType::float64}) {
    const Tensor lp = random_tensor({5, 4}, rng, opts(dt, GetParam()), -3, 0);
    const Tensor t = random_targets(5, 4, rng, GetParam());
    const auto v = lp.to_vector<double>();
    const auto tv = t.to_vector<std::int64_t>();
    std::vector<double> per;
    for (std::size_t n = 0; n < tv.size(); ++n) per.push_back(-v[n * 4 + static_cast<std::size_t>(tv[n])]);
    for (Reduction r : kReductions)
      EXPECT_TRUE(all_close(nll_loss(testing::noncontiguous(lp), t, r), reduced(per, r), testing::tol_for(dt), testing::tol_for(dt)));
  }
  const Tensor lp = random_tensor({5, 4}, rng, opts(DType::float64, GetParam()).requires_grad());
  const Tensor t = random_targets(5, 4, rng, GetParam());
  EXPECT_TRUE(grad_ok([&](const auto& in) { return nll_loss(in[0], t); }, {lp}));
  EXPECT_TRUE(grad_ok([&](const auto& in) { return nll_loss(in[0], t, Reduction::none); }, {lp}));
}

TEST_P(Loss, MseLossMatchesReference) {
  std::mt19937_64 rng(testing::kSeed + 503);
  for (DType dt : {DType::float32, DType::float64}) {
    const Tensor a = random_tensor({3, 2, 5}, rng, opts(dt, GetParam()));
    const Tensor b = random_tensor({3, 2, 5}, rng, opts(dt, GetParam()));
    const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
    std::vector<double> per;
    for (std::size_t i = 0; i < av.size(); ++i) per.push_back((av[i] - bv[i]) * (av[i] - bv[i]));
    for (Reduction r : kReductions)
      EXPECT_TRUE(all_close(mse_loss(testing::noncontiguous(a), b, r), reduced(per, r), testing::tol_for(dt), testing::tol_for(dt)));
  }
  const TensorOptions o = opts(DType::float64, GetParam()).requires_grad();
  const Tensor a = random_tensor({4, 3}, rng, o), b = random_tensor({4, 3}, rng, o);
  EXPECT_TRUE(grad_ok([](const auto& in) { return mse_loss(in[0], in[1]); }, {a, b}));
  EXPECT_TRUE(grad_ok([](const auto& in) { return mse_loss(in[0], in[1], Reduction::sum); }, {a, b}));
}

TEST_P(Loss, BinaryCrossEntropyWithLogitsIsStable) {
  std::mt19937_64 rng(testing::kSeed + 504);
  for (DType dt : {DType::float32, DType::float64}) {
    for (double range : {3.0, 200.0}) {
      const Tensor x = random_tensor({4, 6}, rng, opts(dt, GetParam()), -range, range);
      const Tensor t = random_tensor({4, 6}, rng, opts(dt, GetParam()), 0, 1);
      const auto xv = x.to_vector<double>(), tv = t.to_vector<double>();
      std::vector<double> per;
      for (std::size_t i = 0; i < xv.size(); ++i)
        per.push_back(std::max(xv[i], 0.0) - xv[i] * tv[i] + std::log1p(std::exp(-std::abs(xv[i]))));
      const double tol = dt == DType::float32 ? range * 1e-6 : 1e-12;
      for (Reduction r : kReductions)
        EXPECT_TRUE(all_close(binary_cross_entropy_with_logits(testing::noncontiguous(x), t, r), reduced(per, r), tol, tol))
            << "range " << range;
    }
  }
  const TensorOptions o = opts(DType::float64, GetParam()).requires_grad();
  const Tensor x = random_tensor({3, 5}, rng, o, -4, 4), t = random_tensor({3, 5}, rng, o, 0, 1);
  EXPECT_TRUE(grad_ok([](const auto& in) { return binary_cross_entropy_with_logits(in[0], in[1]); }, {x, t}));
  // At x = 0 the gradient is sigmoid(0) - t = 0.5 - t.
  Tensor z = zeros({1}, opts(DType::float64, GetParam())).requires_grad_();
  binary_cross_entropy_with_logits(z, full({1}, 0.25, opts(DType::float64, GetParam()))).backward();
  EXPECT_DOUBLE_EQ(z.grad().item(), 0.25);
}

TEST_P(Loss, BadTargetsAreClearErrors) {
  using testing::throws_with;
  const Device d = GetParam();
  const Tensor x = zeros({3, 4}, d);
  const Tensor out_of_range = class_indices({0, 7, 1}, {3}, d);
  // On the cpu at the call; on sim and cuda the kernel records it and the
  // next synchronisation (here item()) raises it (tests/gpu/lean_step).
  EXPECT_TRUE(throws_with([&] { (void)cross_entropy(x, out_of_range).item(); },
                          {"cross_entropy", "target 7", "position 1", "4 classes"}));
  const Tensor negative = class_indices({0, 1, -1}, {3}, d);
  EXPECT_TRUE(throws_with([&] { nll_loss(x, negative); }, {"nll_loss", "target -1", "position 2"}));
  EXPECT_TRUE(throws_with([&] { cross_entropy(x, zeros({3}, d)); }, {"int64", "float32 targets"}));
  EXPECT_TRUE(throws_with([&] { cross_entropy(x, class_indices({0, 1, 2}, {3, 1}, d)); },
                          {"[3]", "[3, 1]"}));
  EXPECT_TRUE(throws_with([&] { cross_entropy(x, class_indices({0, 1}, {2}, d)); }, {"[3]", "[2]"}));
  EXPECT_TRUE(throws_with([&] { cross_entropy(zeros({4}, d), class_indices({0}, {1}, d)); },
                          {"[N, classes]", "[4]"}));
  EXPECT_TRUE(throws_with([&] { cross_entropy(x, class_indices({0, 1, 2}, {3}, d), 1.5); },
                          {"label_smoothing", "1.5"}));
  EXPECT_TRUE(throws_with([&] { mse_loss(x, zeros({4, 3}, d)); }, {"mse_loss", "[3, 4]", "[4, 3]"}));
  EXPECT_TRUE(throws_with([&] { binary_cross_entropy_with_logits(x, zeros({3, 4}, TensorOptions(DType::float64).device(d))); },
                          {"binary_cross_entropy_with_logits", "float64"}));
}

INSTANTIATE_TEST_SUITE_P(Devices, Loss, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
