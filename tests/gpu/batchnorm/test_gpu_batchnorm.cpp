// Raw tests of the batch-norm family (kernels/batchnorm.cu) through
// GpuBackend: per-channel statistics and backward sums on every version
// against a float64 reference and against v1 (odd shapes, S = 1, one channel,
// channels split over blocks, a large mean that a one-pass sum of squares
// would lose in float32), the two elementwise maps, the fused ReLU (+ residual)
// variants, the planner, and several sim schedules.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "convkit/sim/schedule.h"
#include "gpu/gpu_testing.h"
#include "kernels/batchnorm.cuh"

namespace convkit {
namespace {

using testing::all_close;
using testing::gpu_devices;
using testing::ScopedKernelVersion;
namespace kernels = convkit::gpu_sim;

constexpr int kVersions = 4;

TensorOptions on(Device d, DType dt) { return TensorOptions().dtype(dt).device(d); }

struct Channels {
  std::int64_t N, C, S;
  explicit Channels(const Shape& s) : N(s[0]), C(s[1]), S(s.numel() / (s[0] * s[1])) {}
  std::int64_t M() const { return N * S; }
  std::size_t at(std::int64_t n, std::int64_t c, std::int64_t i) const {
    return static_cast<std::size_t>((n * C + c) * S + i);
  }
};

// Odd shapes; [5, 3] has S = 1; [3, 2, 50, 60] and [2, 1, 100, 100] make v3 split channels.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {{5, 3}, {1, 1, 1}, {2, 3, 7, 5}, {1, 4, 33}, {7, 2, 3, 3}, {3, 2, 50, 60},
                                       {2, 1, 100, 100}};
  return s;
}

double eps_of(DType dt) {
  return dt == DType::float32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
}

// Longest chain of dependent additions a version makes for a channel of M
// elements: v1 walks it serially; v2 and v3 give a thread at most ceil(M / 256)
// and merge in trees of depth <= 16.
double chain(int version, std::int64_t M) {
  return version == 1 ? static_cast<double>(M) : std::ceil(static_cast<double>(M) / 256) + 16;
}

Tensor per_channel(const Channels& v, Device d, DType dt) { return empty({v.C}, on(d, dt)); }

class GpuBatchNorm : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { kernels::batch_norm_kernel_version(); }  // registers the family
};

TEST_P(GpuBatchNorm, StatisticsEveryVersionMatchFloat64Reference) {
  std::mt19937_64 rng(testing::kSeed + 920);
  for (DType dt : {DType::float32, DType::float64})
    for (const Shape& s : shapes())
      for (double offset : {0.0, 100.0}) {
        const Channels v(s);
        const Tensor x = testing::random_tensor(s, rng, on(GetParam(), dt), offset - 1, offset + 1);
        const auto xv = x.to_vector<double>();
        std::vector<double> mean(static_cast<std::size_t>(v.C)), var(mean.size());
        for (std::int64_t c = 0; c < v.C; ++c) {
          double sum = 0, sq = 0;
          for (std::int64_t n = 0; n < v.N; ++n)
            for (std::int64_t i = 0; i < v.S; ++i) sum += xv[v.at(n, c, i)];
          const double mu = sum / static_cast<double>(v.M());
          for (std::int64_t n = 0; n < v.N; ++n)
            for (std::int64_t i = 0; i < v.S; ++i) sq += (xv[v.at(n, c, i)] - mu) * (xv[v.at(n, c, i)] - mu);
          mean[static_cast<std::size_t>(c)] = mu;
          var[static_cast<std::size_t>(c)] = sq / static_cast<double>(v.M());
        }
        std::vector<double> mean1, var1;
        for (int version = 1; version <= kVersions; ++version) {
          SCOPED_TRACE(::testing::Message() << s << " offset " << offset << " " << dtype_name(dt) << " version "
                                            << version);
          ScopedKernelVersion scoped("batch_norm", version);
          Tensor m = per_channel(v, GetParam(), dt), va = per_channel(v, GetParam(), dt);
          backend_for(GetParam()).batch_norm_stats(x, m, va);
          const auto mg = m.to_vector<double>(), vg = va.to_vector<double>();
          const double k = 2 * chain(version, v.M()) * eps_of(dt);
          for (std::size_t c = 0; c < mean.size(); ++c) {
            const double scale = std::sqrt(var[c]);  // the spread: rounding x - mean costs eps * |mean| / spread
            ASSERT_NEAR(mg[c], mean[c], k * (std::abs(mean[c]) + 1)) << "channel " << c;
            ASSERT_NEAR(vg[c], var[c], k * (var[c] + std::abs(mean[c]) * scale) + 1e-300) << "channel " << c;
          }
          if (version == 1) {
            mean1 = mg;
            var1 = vg;
          } else {
            ASSERT_TRUE(all_close(mg, mean1, 1e-5 * (offset + 1), 0)) << "mean against v1";
            ASSERT_TRUE(all_close(vg, var1, 1e-4, dt == DType::float32 ? 1e-3 : 1e-12)) << "var against v1";
          }
        }
      }
}

TEST_P(GpuBatchNorm, BackwardSumsEveryVersionMatchFloat64Reference) {
  std::mt19937_64 rng(testing::kSeed + 921);
  for (DType dt : {DType::float32, DType::float64})
    for (const Shape& s : shapes()) {
      const Channels v(s);
      const Tensor x = testing::random_tensor(s, rng, on(GetParam(), dt), -2, 3);
      const Tensor dy = testing::random_tensor(s, rng, on(GetParam(), dt));
      const Tensor mean = testing::random_tensor({v.C}, rng, on(GetParam(), dt), 0, 1);
      const auto xv = x.to_vector<double>(), gv = dy.to_vector<double>(), mv = mean.to_vector<double>();
      std::vector<double> a(static_cast<std::size_t>(v.C)), b(a.size()), abs_a(a.size()), abs_b(a.size());
      for (std::int64_t c = 0; c < v.C; ++c)
        for (std::int64_t n = 0; n < v.N; ++n)
          for (std::int64_t i = 0; i < v.S; ++i) {
            const std::size_t e = v.at(n, c, i), k = static_cast<std::size_t>(c);
            const double t = gv[e] * (xv[e] - mv[k]);
            a[k] += gv[e];
            b[k] += t;
            abs_a[k] += std::abs(gv[e]);
            abs_b[k] += std::abs(t);
          }
      for (int version = 1; version <= kVersions; ++version) {
        SCOPED_TRACE(::testing::Message() << s << " " << dtype_name(dt) << " version " << version);
        ScopedKernelVersion scoped("batch_norm", version);
        Tensor sa = per_channel(v, GetParam(), dt), sb = per_channel(v, GetParam(), dt);
        backend_for(GetParam()).batch_norm_backward_reduce(dy, x, mean, sa, sb);
        const auto ga = sa.to_vector<double>(), gb = sb.to_vector<double>();
        const double k = 2 * chain(version, v.M()) * eps_of(dt);
        for (std::size_t c = 0; c < a.size(); ++c) {
          ASSERT_NEAR(ga[c], a[c], k * abs_a[c] + 1e-300) << "channel " << c;
          ASSERT_NEAR(gb[c], b[c], k * abs_b[c] + 1e-300) << "channel " << c;
        }
      }
    }
}

TEST_P(GpuBatchNorm, AffineAndInputGradientMatchFloat64Reference) {
  std::mt19937_64 rng(testing::kSeed + 922);
  for (DType dt : {DType::float32, DType::float64})
    for (const Shape& s : shapes()) {
      SCOPED_TRACE(::testing::Message() << s << " " << dtype_name(dt));
      const Channels v(s);
      const auto opts = on(GetParam(), dt);
      const Tensor x = testing::random_tensor(s, rng, opts, -2, 2), dy = testing::random_tensor(s, rng, opts);
      const Tensor scale = testing::random_tensor({v.C}, rng, opts), shift = testing::random_tensor({v.C}, rng, opts);
      const Tensor mean = testing::random_tensor({v.C}, rng, opts), invstd = testing::random_tensor({v.C}, rng, opts, 0.5, 2);
      const Tensor weight = testing::random_tensor({v.C}, rng, opts);
      const Tensor s1 = testing::random_tensor({v.C}, rng, opts, -5, 5), s2 = testing::random_tensor({v.C}, rng, opts, -5, 5);
      const auto xv = x.to_vector<double>(), gv = dy.to_vector<double>(), av = scale.to_vector<double>(),
                 bv = shift.to_vector<double>(), mv = mean.to_vector<double>(), iv = invstd.to_vector<double>(),
                 wv = weight.to_vector<double>(), s1v = s1.to_vector<double>(), s2v = s2.to_vector<double>();
      std::vector<double> y(xv.size()), gi(xv.size());
      const double M = static_cast<double>(v.M());
      for (std::int64_t n = 0; n < v.N; ++n)
        for (std::int64_t c = 0; c < v.C; ++c)
          for (std::int64_t i = 0; i < v.S; ++i) {
            const std::size_t e = v.at(n, c, i), k = static_cast<std::size_t>(c);
            y[e] = xv[e] * av[k] + bv[k];
            gi[e] = wv[k] * iv[k] * (gv[e] - s1v[k] / M - (xv[e] - mv[k]) * iv[k] * iv[k] * s2v[k] / M);
          }
      const double tol = dt == DType::float32 ? 1e-5 : 1e-13;
      Tensor out = empty(s, opts), grad_in = empty(s, opts);
      backend_for(GetParam()).batch_norm_affine(x, scale, shift, /*relu=*/false, out);
      EXPECT_TRUE(all_close(out, y, tol, tol));
      std::vector<double> rectified(y);
      for (double& v : rectified) v = v > 0 ? v : 0;
      backend_for(GetParam()).batch_norm_affine(x, scale, shift, /*relu=*/true, out);
      EXPECT_TRUE(all_close(out, rectified, tol, tol));
      backend_for(GetParam()).batch_norm_backward_input(dy, x, mean, invstd, weight, s1, s2, grad_in);
      EXPECT_TRUE(all_close(grad_in, gi, tol, tol));
    }
}

// The fused variants (batch_norm_add_relu): the masked reduction on every
// version, writing the masked gradient to a tensor of its own and over the
// gradient itself, and the affine map with a residual and the ReLU.
TEST_P(GpuBatchNorm, FusedReluVariantsEveryVersionMatchFloat64Reference) {
  std::mt19937_64 rng(testing::kSeed + 924);
  for (DType dt : {DType::float32, DType::float64})
    for (const Shape& s : shapes()) {
      const Channels v(s);
      const auto opts = on(GetParam(), dt);
      const Tensor x = testing::random_tensor(s, rng, opts, -2, 3), dy = testing::random_tensor(s, rng, opts);
      const Tensor relu_out = testing::random_tensor(s, rng, opts, -1, 1);  // only its sign matters
      const Tensor mean = testing::random_tensor({v.C}, rng, opts, 0, 1);
      const Tensor residual = testing::random_tensor(s, rng, opts), scale = testing::random_tensor({v.C}, rng, opts),
                   shift = testing::random_tensor({v.C}, rng, opts);
      const auto xv = x.to_vector<double>(), gv = dy.to_vector<double>(), yv = relu_out.to_vector<double>(),
                 mv = mean.to_vector<double>(), rv = residual.to_vector<double>(), av = scale.to_vector<double>(),
                 bv = shift.to_vector<double>();
      std::vector<double> masked(xv.size()), out(xv.size()), a(static_cast<std::size_t>(v.C)), b(a.size()),
          abs_a(a.size()), abs_b(a.size());
      for (std::int64_t c = 0; c < v.C; ++c)
        for (std::int64_t n = 0; n < v.N; ++n)
          for (std::int64_t i = 0; i < v.S; ++i) {
            const std::size_t e = v.at(n, c, i), k = static_cast<std::size_t>(c);
            masked[e] = yv[e] > 0 ? gv[e] : 0;
            const double t = masked[e] * (xv[e] - mv[k]);
            a[k] += masked[e];
            b[k] += t;
            abs_a[k] += std::abs(masked[e]);
            abs_b[k] += std::abs(t);
            out[e] = std::max(0.0, xv[e] * av[k] + bv[k] + rv[e]);
          }
      const double tol = dt == DType::float32 ? 1e-5 : 1e-13;
      Tensor fused = empty(s, opts);
      backend_for(GetParam()).batch_norm_add_relu(x, residual, scale, shift, fused);
      EXPECT_TRUE(all_close(fused, out, tol, tol)) << s << " " << dtype_name(dt) << " add_relu";
      for (int version = 1; version <= kVersions; ++version)
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(::testing::Message() << s << " " << dtype_name(dt) << " version " << version
                                            << (in_place ? " in place" : ""));
          ScopedKernelVersion scoped("batch_norm", version);
          const Tensor g = in_place ? dy.clone() : dy;
          const Tensor gm = in_place ? g : empty(s, opts);
          Tensor sa = per_channel(v, GetParam(), dt), sb = per_channel(v, GetParam(), dt);
          backend_for(GetParam()).batch_norm_relu_backward_reduce(g, relu_out, x, mean, gm, sa, sb);
          EXPECT_TRUE(all_close(gm, masked, 0, 0)) << "grad_masked";
          const auto ga = sa.to_vector<double>(), gb = sb.to_vector<double>();
          const double k = 2 * chain(version, v.M()) * eps_of(dt);
          for (std::size_t c = 0; c < a.size(); ++c) {
            ASSERT_NEAR(ga[c], a[c], k * abs_a[c] + 1e-300) << "channel " << c;
            ASSERT_NEAR(gb[c], b[c], k * abs_b[c] + 1e-300) << "channel " << c;
          }
        }
    }
}

// Version 4's maps (16 bytes at a time) against the element-at-a-time maps
// of version 3, bit for bit: planes whose S is a multiple of a vector, one
// that is only for float64 (S = 6), and arrays 4 bytes off 16-byte
// alignment (a contiguous view at an offset), where version 4 runs the
// element maps itself.
TEST_P(GpuBatchNorm, VectorMapsGiveTheElementMapsBits) {
  std::mt19937_64 rng(testing::kSeed + 925);
  for (DType dt : {DType::float32, DType::float64})
    for (const Shape& s : {Shape{2, 3, 4, 4}, Shape{3, 7, 8, 2}, Shape{2, 5, 6}, Shape{4, 64, 8, 8}})
      for (bool aligned : {true, false}) {
        SCOPED_TRACE(::testing::Message() << s << " " << dtype_name(dt) << (aligned ? "" : " misaligned"));
        const Channels v(s);
        const auto opts = on(GetParam(), dt);
        // Misaligned: each tensor a contiguous view one element into a larger one.
        const auto tensor = [&](double lo, double hi) {
          const std::int64_t skip = aligned ? 0 : 1;
          return testing::random_tensor({s.numel() + skip}, rng, opts, lo, hi).narrow(0, skip, s.numel()).view(s);
        };
        const Tensor x = tensor(-2, 2), dy = tensor(-1, 1), residual = tensor(-1, 1);
        const Tensor scale = testing::random_tensor({v.C}, rng, opts), shift = testing::random_tensor({v.C}, rng, opts);
        const Tensor mean = testing::random_tensor({v.C}, rng, opts), invstd = testing::random_tensor({v.C}, rng, opts, 0.5, 2);
        const Tensor weight = testing::random_tensor({v.C}, rng, opts);
        const Tensor s1 = testing::random_tensor({v.C}, rng, opts, -5, 5), s2 = testing::random_tensor({v.C}, rng, opts, -5, 5);
        std::vector<std::vector<double>> results[2];
        for (int version : {3, 4}) {
          ScopedKernelVersion scoped("batch_norm", version);
          Backend& b = backend_for(GetParam());
          Tensor plain = empty(s, opts), rectified = empty(s, opts), fused = empty(s, opts), grad_in = empty(s, opts);
          b.batch_norm_affine(x, scale, shift, /*relu=*/false, plain);
          b.batch_norm_affine(x, scale, shift, /*relu=*/true, rectified);
          b.batch_norm_add_relu(x, residual, scale, shift, fused);
          b.batch_norm_backward_input(dy, x, mean, invstd, weight, s1, s2, grad_in);
          for (const Tensor& t : {plain, rectified, fused, grad_in}) results[version - 3].push_back(t.to_vector<double>());
        }
        for (std::size_t i = 0; i < results[0].size(); ++i) EXPECT_EQ(results[1][i], results[0][i]) << "output " << i;
      }
}

TEST(GpuBatchNormPlan, PlannerSplitsOnlyWhenChannelsCannotFillTheGpu) {
  using M = kernels::BatchNormMapping;
  EXPECT_EQ(kernels::plan_batch_norm(3, 2, 3000, 1).mapping, M::thread_per_channel);
  EXPECT_EQ(kernels::plan_batch_norm(3, 2, 3000, 2).mapping, M::block_per_channel);
  const auto split = kernels::plan_batch_norm(3, 2, 3000, 3);
  EXPECT_EQ(split.mapping, M::split_channels);
  EXPECT_EQ(split.splits, 2u);
  EXPECT_EQ(split.workspace_elements, 8);
  EXPECT_EQ(kernels::plan_batch_norm(2, 1, 10000, 3).splits, 4u);
  // ResNet-like: 64 channels of 128 x 32 x 32 -> 16 blocks each.
  EXPECT_EQ(kernels::plan_batch_norm(128, 64, 1024, 3).splits, 16u);
  EXPECT_EQ(kernels::plan_batch_norm(128, 2048, 49, 3).mapping, M::block_per_channel);  // enough channels
  EXPECT_EQ(kernels::plan_batch_norm(7, 2, 9, 3).mapping, M::block_per_channel);        // too little work
  // Version 4's reductions are version 3's.
  for (const auto& [N, C, S] : {std::tuple{3, 2, 3000}, {128, 64, 1024}, {128, 2048, 49}, {7, 2, 9}}) {
    const auto v3 = kernels::plan_batch_norm(N, C, S, 3), v4 = kernels::plan_batch_norm(N, C, S, 4);
    EXPECT_EQ(v4.mapping, v3.mapping);
    EXPECT_EQ(v4.splits, v3.splits);
    EXPECT_EQ(v4.workspace_elements, v3.workspace_elements);
  }
  EXPECT_THROW(kernels::plan_batch_norm(1, 1, 1, 5), Error);
}

TEST(GpuBatchNormSchedules, BlockAndSplitMappingsUnderReverseAndRandomOrders) {
  kernels::batch_norm_kernel_version();
  std::mt19937_64 rng(testing::kSeed + 923);
  const Device dev("sim");
  for (const char* schedule : {"reverse", "random:5"}) {
    sim::ScopedSchedule scoped(sim::Schedule::parse(schedule));
    for (const Shape& s : {Shape{2, 3, 7, 5}, Shape{3, 2, 50, 60}}) {
      SCOPED_TRACE(::testing::Message() << schedule << " " << s);
      const Channels v(s);
      const Tensor x = testing::random_tensor(s, rng, on(dev, DType::float64), -1, 2);
      Tensor m1 = per_channel(v, dev, DType::float64), v1 = per_channel(v, dev, DType::float64);
      {
        ScopedKernelVersion version("batch_norm", 1);
        backend_for(dev).batch_norm_stats(x, m1, v1);
      }
      for (int version : {2, 3}) {
        ScopedKernelVersion scoped_version("batch_norm", version);
        Tensor m = per_channel(v, dev, DType::float64), va = per_channel(v, dev, DType::float64);
        backend_for(dev).batch_norm_stats(x, m, va);
        EXPECT_TRUE(all_close(m, m1.to_vector<double>(), 1e-13, 1e-13)) << "v" << version;
        EXPECT_TRUE(all_close(va, v1.to_vector<double>(), 1e-13, 1e-13)) << "v" << version;
        Tensor a = per_channel(v, dev, DType::float64), b = per_channel(v, dev, DType::float64);
        backend_for(dev).batch_norm_backward_reduce(x, x, m, a, b);  // dy = x: sum(x) = M * mean, sum(x (x - mean)) = M * var
        EXPECT_TRUE(all_close(a, (m1 * static_cast<double>(v.M())).to_vector<double>(), 1e-10, 1e-12));
        EXPECT_TRUE(all_close(b, (v1 * static_cast<double>(v.M())).to_vector<double>(), 1e-10, 1e-12));
        // Behind a ReLU whose output is positive everywhere, the masked sums are the plain ones.
        Tensor am = per_channel(v, dev, DType::float64), bm = per_channel(v, dev, DType::float64);
        const Tensor gm = empty(s, TensorOptions().dtype(DType::float64).device(dev));
        backend_for(dev).batch_norm_relu_backward_reduce(x, ones(s, TensorOptions().dtype(DType::float64).device(dev)),
                                                         x, m, gm, am, bm);
        EXPECT_TRUE(all_close(am, a.to_vector<double>(), 0, 0));
        EXPECT_TRUE(all_close(bm, b.to_vector<double>(), 0, 0));
        EXPECT_TRUE(all_close(gm, x.to_vector<double>(), 0, 0));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, GpuBatchNorm, ::testing::ValuesIn(gpu_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
