// Batch norm: training-mode output and running-stat updates against a float64
// reference over several steps, eval mode from the running stats, gradcheck
// of the closed-form backward in both modes, and the backend's coefficients
// against the tensor ops they replaced, bit for bit.
#include <algorithm>
#include <cmath>

#include "ops/ops_testing.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::opts;
using testing::random_tensor;

// Channel c of x viewed as [N, C, S].
struct Channels {
  std::int64_t N, C, S;
  explicit Channels(const Shape& s) : N(s[0]), C(s[1]), S(s.numel() / (s[0] * s[1])) {}
  std::size_t at(std::int64_t n, std::int64_t c, std::int64_t i) const {
    return static_cast<std::size_t>((n * C + c) * S + i);
  }
};

struct Stats {
  std::vector<double> mean, biased_var;
};

Stats ref_stats(const std::vector<double>& x, const Channels& v) {
  Stats st;
  const auto M = static_cast<double>(v.N * v.S);
  for (std::int64_t c = 0; c < v.C; ++c) {
    double s = 0, sq = 0;
    for (std::int64_t n = 0; n < v.N; ++n)
      for (std::int64_t i = 0; i < v.S; ++i) s += x[v.at(n, c, i)];
    const double mu = s / M;
    for (std::int64_t n = 0; n < v.N; ++n)
      for (std::int64_t i = 0; i < v.S; ++i) sq += (x[v.at(n, c, i)] - mu) * (x[v.at(n, c, i)] - mu);
    st.mean.push_back(mu);
    st.biased_var.push_back(sq / M);
  }
  return st;
}

std::vector<double> ref_normalize(const std::vector<double>& x, const Channels& v, const std::vector<double>& mean,
                                  const std::vector<double>& var, const std::vector<double>& w,
                                  const std::vector<double>& b, double eps) {
  std::vector<double> y(x.size());
  for (std::int64_t n = 0; n < v.N; ++n)
    for (std::int64_t c = 0; c < v.C; ++c)
      for (std::int64_t i = 0; i < v.S; ++i) {
        const auto k = static_cast<std::size_t>(c);
        y[v.at(n, c, i)] = (x[v.at(n, c, i)] - mean[k]) / std::sqrt(var[k] + eps) * (w.empty() ? 1.0 : w[k]) +
                           (b.empty() ? 0.0 : b[k]);
      }
  return y;
}

class BatchNorm : public ::testing::TestWithParam<Device> {};

TEST_P(BatchNorm, TrainingOutputAndRunningStatsMatchReference) {
  std::mt19937_64 rng(testing::kSeed + 200);
  const double momentum = 0.1, eps = 1e-5;
  for (DType dt : {DType::float32, DType::float64}) {
    const double tol = dt == DType::float32 ? 1e-4 : 1e-10;
    for (const Shape& s : {Shape{4, 3}, Shape{2, 5}, Shape{2, 3, 5, 7}, Shape{1, 2, 3, 3}, Shape{3, 1, 4, 1}}) {
      for (bool affine : {true, false}) {
        const Channels v(s);
        const TensorOptions o = opts(dt, GetParam());
        Tensor running_mean = zeros({v.C}, o), running_var = ones({v.C}, o);
        const Tensor w = affine ? random_tensor({v.C}, rng, o, 0.5, 1.5) : Tensor();
        const Tensor b = affine ? random_tensor({v.C}, rng, o) : Tensor();
        std::vector<double> rm(static_cast<std::size_t>(v.C), 0.0), rv(static_cast<std::size_t>(v.C), 1.0);
        const std::vector<double> wv = affine ? w.to_vector<double>() : std::vector<double>{};
        const std::vector<double> bv = affine ? b.to_vector<double>() : std::vector<double>{};
        const auto M = static_cast<double>(v.N * v.S);
        for (int step = 0; step < 4; ++step) {
          Tensor x = random_tensor(s, rng, o, -1 + step, 2 + 2 * step);  // shifting statistics
          const auto xv = x.to_vector<double>();
          if (step % 2 == 1) x = testing::noncontiguous(x);
          const Stats st = ref_stats(xv, v);
          const Tensor y = batch_norm(x, running_mean, running_var, w, b, true, momentum, eps);
          EXPECT_TRUE(all_close(y, ref_normalize(xv, v, st.mean, st.biased_var, wv, bv, eps), tol, tol)) << s;
          for (std::size_t c = 0; c < rm.size(); ++c) {
            rm[c] = (1 - momentum) * rm[c] + momentum * st.mean[c];
            rv[c] = (1 - momentum) * rv[c] + momentum * st.biased_var[c] * M / (M - 1);
          }
        }
        EXPECT_TRUE(all_close(running_mean, rm, tol, tol)) << s;
        EXPECT_TRUE(all_close(running_var, rv, tol, tol)) << s;

        // Eval mode normalises with the running statistics and leaves them alone.
        const Tensor x = random_tensor(s, rng, o, -3, 3);
        const Tensor y = batch_norm(testing::noncontiguous(x), running_mean, running_var, w, b, false, momentum, eps);
        EXPECT_TRUE(all_close(y, ref_normalize(x.to_vector<double>(), v, rm, rv, wv, bv, eps), tol, tol)) << s;
        EXPECT_TRUE(all_close(running_mean, rm, tol, tol));
      }
    }
  }
}

TEST_P(BatchNorm, TrainingWithoutRunningStatsUsesBatchStats) {
  std::mt19937_64 rng(testing::kSeed + 201);
  const Tensor x = random_tensor({3, 2, 2, 2}, rng, opts(DType::float64, GetParam()));
  const Channels v(x.shape());
  const auto xv = x.to_vector<double>();
  const Stats st = ref_stats(xv, v);
  EXPECT_TRUE(all_close(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true),
                        ref_normalize(xv, v, st.mean, st.biased_var, {}, {}, 1e-5), 1e-12, 1e-12));
}

TEST_P(BatchNorm, GradientsPassGradcheckInBothModes) {
  std::mt19937_64 rng(testing::kSeed + 202);
  for (const Shape& s : {Shape{5, 3}, Shape{2, 3, 3, 2}, Shape{1, 2, 2, 3}}) {
    const TensorOptions o = opts(DType::float64, GetParam());
    const std::int64_t C = s[1];
    const Tensor x = random_tensor(s, rng, TensorOptions(o).requires_grad());
    const Tensor w = random_tensor({C}, rng, TensorOptions(o).requires_grad(), 0.5, 1.5);
    const Tensor b = random_tensor({C}, rng, TensorOptions(o).requires_grad());
    const Tensor rm = random_tensor({C}, rng, o), rv = random_tensor({C}, rng, o, 0.5, 2);
    for (bool training : {true, false}) {
      // Running stats are copies so that gradcheck's repeated forwards see the same ones.
      EXPECT_TRUE(grad_ok([&](const auto& in) {
        return batch_norm(in[0], rm.clone(), rv.clone(), in[1], in[2], training, 0.1, 1e-3);
      }, {x, w, b})) << s << " training " << training;
      EXPECT_TRUE(grad_ok([&](const auto& in) {
        return batch_norm(in[0], rm.clone(), rv.clone(), Tensor(), Tensor(), training, 0.1, 1e-3);
      }, {x})) << s << " no affine, training " << training;
      if (s.size() == 4) {  // a non-contiguous input: H and W swapped
        EXPECT_TRUE(grad_ok([&](const auto& in) {
          return batch_norm(in[0].transpose(2, 3), rm.clone(), rv.clone(), in[1], Tensor(), training, 0.1, 1e-3);
        }, {x, w})) << s;
      }
    }
  }
}

// batch_norm_relu: the values of relu(batch_norm(...)) in both modes, in
// float32 and float64, and a gradient that passes gradcheck.
TEST_P(BatchNorm, ReluFusedMatchesReluOfBatchNorm) {
  std::mt19937_64 rng(testing::kSeed + 205);
  for (DType dt : {DType::float32, DType::float64}) {
    const TensorOptions o = opts(dt, GetParam());
    const Shape s{3, 4, 5, 3};
    const Tensor x = random_tensor(s, rng, o), w = random_tensor({4}, rng, o, 0.5, 1.5),
                 b = random_tensor({4}, rng, o);
    for (bool training : {true, false}) {
      Tensor rm1 = random_tensor({4}, rng, o), rv1 = random_tensor({4}, rng, o, 0.5, 2);
      Tensor rm2 = rm1.clone(), rv2 = rv1.clone();
      const Tensor fused = batch_norm_relu(x, rm1, rv1, w, b, training, 0.1, 1e-3);
      const Tensor composed = relu(batch_norm(x, rm2, rv2, w, b, training, 0.1, 1e-3));
      EXPECT_TRUE(all_close(fused, composed.to_vector<double>(), 0, 0)) << dt << " training " << training;
      EXPECT_TRUE(all_close(rm1, rm2.to_vector<double>(), 0, 0));
      EXPECT_TRUE(all_close(rv1, rv2.to_vector<double>(), 0, 0));
      const std::vector<double> y = fused.to_vector<double>();
      EXPECT_TRUE(std::any_of(y.begin(), y.end(), [](double v) { return v == 0; }));  // the ReLU cut something
    }
  }
  const TensorOptions o = opts(DType::float64, GetParam());
  const Tensor x = random_tensor({2, 3, 3, 2}, rng, TensorOptions(o).requires_grad());
  const Tensor w = random_tensor({3}, rng, TensorOptions(o).requires_grad(), 0.5, 1.5);
  const Tensor b = random_tensor({3}, rng, TensorOptions(o).requires_grad());
  for (bool training : {true, false}) {
    const Tensor rm = random_tensor({3}, rng, o), rv = random_tensor({3}, rng, o, 0.5, 2);
    EXPECT_TRUE(grad_ok([&](const auto& in) {
      return batch_norm_relu(in[0], rm.clone(), rv.clone(), in[1], in[2], training, 0.1, 1e-3);
    }, {x, w, b})) << "training " << training;
  }
}

TEST_P(BatchNorm, NonContiguousGradientInput) {
  std::mt19937_64 rng(testing::kSeed + 203);
  const TensorOptions o = opts(DType::float64, GetParam());
  // The input is a channel-sliced view, so neither x nor its gradient is contiguous.
  const Tensor big = random_tensor({3, 6, 2, 2}, rng, TensorOptions(o).requires_grad());
  EXPECT_TRUE(grad_ok([&](const auto& in) {
    return batch_norm(in[0].slice(1, 0, 6, 2), Tensor(), Tensor(), Tensor(), Tensor(), true);
  }, {big}));
}

// Backend::batch_norm_coefficients is the chain of tensor ops the op ran
// before it (eleven launches on a GPU), to the last bit, on every device:
// with and without bias and running statistics, momentum 0, 0.1 and 1, a
// zero variance, and C past one block of threads.
TEST_P(BatchNorm, CoefficientsAreTheComposedTensorOpsBitForBit) {
  std::mt19937_64 rng(testing::kSeed + 206);
  const double eps = 1e-5, correction = 7.0 / 6.0;
  for (DType dt : {DType::float32, DType::float64}) {
    const TensorOptions o = opts(dt, GetParam());
    for (std::int64_t C : {1, 3, 64, 300}) {
      const Tensor mean = random_tensor({C}, rng, o, -3, 3), weight = random_tensor({C}, rng, o, -2, 2);
      Tensor var = random_tensor({C}, rng, o, 0, 4);
      var.narrow(0, 0, 1).fill_(0.0);
      for (bool with_bias : {true, false})
        for (bool running : {true, false})
          for (double momentum : {0.1, 0.0, 1.0}) {
            SCOPED_TRACE(::testing::Message() << dt << " C " << C << " bias " << with_bias << " running " << running
                                            << " momentum " << momentum);
            const Tensor bias = with_bias ? random_tensor({C}, rng, o) : Tensor();
            const Tensor rm0 = random_tensor({C}, rng, o), rv0 = random_tensor({C}, rng, o, 0.5, 2);
            const Tensor invstd_want = 1.0 / sqrt(add_scalar(var, eps));
            const Tensor scale_want = mul(weight, invstd_want);
            Tensor shift_want = neg(mul(mean, scale_want));
            if (with_bias) shift_want = add(shift_want, bias);
            Tensor rm_want = rm0.clone(), rv_want = rv0.clone();
            rm_want.mul_(1 - momentum).add_(mean, momentum);
            rv_want.mul_(1 - momentum).add_(var, momentum * correction);

            const Tensor invstd = empty({C}, o), scale = empty({C}, o), shift = empty({C}, o);
            const Tensor rm = running ? rm0.clone() : Tensor(), rv = running ? rv0.clone() : Tensor();
            backend_for(GetParam()).batch_norm_coefficients(mean, var, weight, bias, rm, rv,
                                                           {eps, momentum, correction}, invstd, scale, shift);
            EXPECT_EQ(invstd.to_vector<double>(), invstd_want.to_vector<double>());
            EXPECT_EQ(scale.to_vector<double>(), scale_want.to_vector<double>());
            EXPECT_EQ(shift.to_vector<double>(), shift_want.to_vector<double>());
            if (running) {
              EXPECT_EQ(rm.to_vector<double>(), rm_want.to_vector<double>());
              EXPECT_EQ(rv.to_vector<double>(), rv_want.to_vector<double>());
            }
          }
    }
  }
}

// Running statistics that are strided views are updated where they lie, the
// elements between them untouched, as contiguous ones are.
TEST_P(BatchNorm, StridedRunningStatsAreUpdatedInPlace) {
  std::mt19937_64 rng(testing::kSeed + 207);
  const TensorOptions o = opts(DType::float32, GetParam());
  const Tensor x = random_tensor({4, 3, 2, 2}, rng, o);
  Tensor rm_dense = random_tensor({3}, rng, o), rv_dense = random_tensor({3}, rng, o, 0.5, 2);
  Tensor rm_big = full({6}, 7.0, o), rv_big = full({6}, 9.0, o);
  Tensor rm_view = rm_big.slice(0, 0, 6, 2), rv_view = rv_big.slice(0, 1, 6, 2);
  rm_view.copy_(rm_dense);
  rv_view.copy_(rv_dense);
  const Tensor want = batch_norm(x, rm_dense, rv_dense, Tensor(), Tensor(), true);
  const Tensor got = batch_norm(x, rm_view, rv_view, Tensor(), Tensor(), true);
  EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>());
  EXPECT_EQ(rm_view.to_vector<double>(), rm_dense.to_vector<double>());
  EXPECT_EQ(rv_view.to_vector<double>(), rv_dense.to_vector<double>());
  for (std::int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(rm_big[2 * i + 1].item(), 7.0);
    EXPECT_EQ(rv_big[2 * i].item(), 9.0);
  }
}

TEST_P(BatchNorm, BadArgumentsAreClearErrors) {
  using testing::throws_with;
  const Device d = GetParam();
  const Tensor x = zeros({4, 3, 2, 2}, d), c3 = ones({3}, d);
  EXPECT_TRUE(throws_with([&] { batch_norm(zeros({1, 3}, d), c3, c3, c3, c3, true); },
                          {"more than 1 value per channel", "[1, 3]"}));
  EXPECT_TRUE(throws_with([&] { batch_norm(x, c3, c3, ones({4}, d), c3, true); }, {"weight", "[3]", "[4]"}));
  EXPECT_TRUE(throws_with([&] { batch_norm(x, Tensor(), Tensor(), c3, c3, false); }, {"eval mode", "running_mean"}));
  EXPECT_TRUE(throws_with([&] { batch_norm(x, c3, Tensor(), c3, c3, true); }, {"running_var"}));
  EXPECT_TRUE(throws_with([&] { batch_norm(x, c3, ones({3}, TensorOptions(DType::float64).device(d)), c3, c3, true); },
                          {"running_var", "float64", "float32"}));
  EXPECT_TRUE(throws_with([&] { batch_norm(zeros({4}, d), Tensor(), Tensor(), Tensor(), Tensor(), true); }, {"[4]"}));
}

INSTANTIATE_TEST_SUITE_P(Devices, BatchNorm, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
