// Max, average and global average pooling against a float64 reference that
// walks every window position (padding included) explicitly, over stride,
// padding, ceil_mode and count_include_pad combinations; gradients by gradcheck.
#include <cmath>
#include <limits>
#include <array>
#include <random>
#include <vector>

#include "cpu/cpu_pool.h"
#include "cpu/isa_dispatch.h"

#include "ops/ops_testing.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::opts;
using testing::random_tensor;

struct PoolCase {
  Shape shape;
  std::int64_t kh, kw, sh, sw, ph, pw;
  bool ceil;
};

Pool2dParams params_of(const PoolCase& c, bool include_pad) {
  return Pool2dParams(c.kh, c.kw).stride(c.sh, c.sw).padding(c.ph, c.pw).ceil_mode(c.ceil).count_include_pad(include_pad);
}

// Output length straight from the definition: floor or ceil of
// (in + 2p - k) / s, plus one, minus the last window when it would start in the right padding.
std::int64_t ref_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, bool ceil_mode) {
  const double q = static_cast<double>(in + 2 * p - k) / static_cast<double>(s);
  auto out = static_cast<std::int64_t>(ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

struct RefPool {
  Shape shape;
  std::vector<double> max, avg;
  std::vector<std::int64_t> argmax;  // flat index into x
};

RefPool ref_pool(const std::vector<double>& x, const PoolCase& c, bool include_pad) {
  const std::int64_t N = c.shape[0], C = c.shape[1], H = c.shape[2], W = c.shape[3];
  const std::int64_t OH = ref_out(H, c.kh, c.sh, c.ph, c.ceil), OW = ref_out(W, c.kw, c.sw, c.pw, c.ceil);
  RefPool r{Shape{N, C, OH, OW}, {}, {}, {}};
  for (std::int64_t p = 0; p < N * C; ++p)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        std::int64_t best_i = -1, inside = 0, in_padded = 0;
        for (std::int64_t i = 0; i < c.kh; ++i)
          for (std::int64_t j = 0; j < c.kw; ++j) {
            const std::int64_t h = oh * c.sh - c.ph + i, w = ow * c.sw - c.pw + j;
            if (h >= -c.ph && h < H + c.ph && w >= -c.pw && w < W + c.pw) ++in_padded;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const std::int64_t flat = (p * H + h) * W + w;
            const double v = x[static_cast<std::size_t>(flat)];
            ++inside;
            sum += v;
            if (v > best) { best = v; best_i = flat; }
          }
        r.max.push_back(best);
        r.argmax.push_back(best_i);
        r.avg.push_back(sum / static_cast<double>(include_pad ? in_padded : inside));
      }
  return r;
}

std::vector<PoolCase> pool_cases() {
  return {
      {{1, 1, 5, 5}, 2, 2, 2, 2, 0, 0, false},  {{1, 1, 5, 5}, 2, 2, 2, 2, 0, 0, true},
      {{2, 3, 7, 6}, 3, 3, 2, 2, 1, 1, false},  {{2, 3, 7, 6}, 3, 3, 2, 2, 1, 1, true},
      {{1, 2, 4, 9}, 2, 3, 1, 2, 1, 1, true},   {{3, 1, 6, 6}, 3, 2, 3, 1, 0, 1, false},
      {{1, 1, 3, 3}, 2, 2, 2, 2, 1, 1, true},   {{2, 2, 5, 5}, 3, 3, 3, 3, 1, 1, true},
      {{1, 3, 8, 5}, 1, 1, 2, 2, 0, 0, false},  {{2, 1, 9, 7}, 4, 4, 3, 2, 2, 2, true},
      {{1, 1, 1, 1}, 1, 1, 1, 1, 0, 0, false},  {{1, 2, 6, 11}, 3, 5, 2, 3, 1, 2, true},
  };
}

// Random valid configurations on top of the fixed ones: sizes 1..9, kernels
// 1..4 (non-square), strides 1..3, padding up to half the kernel, either ceil mode.
std::vector<PoolCase> random_pool_cases(std::mt19937_64& rng, int count) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  std::vector<PoolCase> out;
  while (static_cast<int>(out.size()) < count) {
    PoolCase c{{pick(1, 3), pick(1, 3), pick(1, 9), pick(1, 9)}, pick(1, 4), pick(1, 4), pick(1, 3), pick(1, 3), 0, 0,
               pick(0, 1) == 1};
    c.ph = pick(0, c.kh / 2);
    c.pw = pick(0, c.kw / 2);
    if (ref_out(c.shape[2], c.kh, c.sh, c.ph, c.ceil) >= 1 && ref_out(c.shape[3], c.kw, c.sw, c.pw, c.ceil) >= 1)
      out.push_back(c);
  }
  return out;
}

class Pool : public ::testing::TestWithParam<Device> {};

TEST_P(Pool, OutputSizeFollowsPyTorchCeilRule) {
  const Tensor x = zeros({1, 1, 3, 3}, GetParam());
  // ceil((3 + 2 - 2) / 2) + 1 = 3, but the third window would start in the right padding.
  EXPECT_EQ(max_pool2d(x, Pool2dParams(2).stride(2).padding(1).ceil_mode()).shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(max_pool2d(zeros({1, 1, 5, 5}, GetParam()), Pool2dParams(2).ceil_mode()).shape(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(avg_pool2d(zeros({1, 1, 5, 5}, GetParam()), Pool2dParams(2)).shape(), (Shape{1, 1, 2, 2}));
  // stride 0 means "the kernel size".
  EXPECT_EQ(max_pool2d(zeros({2, 3, 8, 6}, GetParam()), Pool2dParams(4, 3)).shape(), (Shape{2, 3, 2, 2}));
}

TEST_P(Pool, ForwardMatchesFloat64Reference) {
  std::mt19937_64 rng(testing::kSeed + 100);
  for (const auto& c : pool_cases()) {
    for (DType dt : {DType::float32, DType::float64}) {
      for (bool strided : {false, true}) {
        Tensor x = random_tensor(c.shape, rng, opts(dt, GetParam()), -2, 2);
        const auto xv = x.to_vector<double>();
        if (strided) x = testing::noncontiguous(x);
        for (bool include_pad : {true, false}) {
          const RefPool r = ref_pool(xv, c, include_pad);
          const Pool2dParams p = params_of(c, include_pad);
          const Tensor mx = max_pool2d(x, p), av = avg_pool2d(x, p);
          ASSERT_EQ(mx.shape(), r.shape) << c.shape;
          ASSERT_EQ(av.shape(), r.shape) << c.shape;
          EXPECT_EQ(mx.dtype(), dt);
          EXPECT_TRUE(all_close(mx, r.max, 0, 0)) << c.shape << " k" << c.kh << "x" << c.kw;
          const double tol = testing::tol_for(dt);
          EXPECT_TRUE(all_close(av, r.avg, tol, tol))
              << c.shape << " k" << c.kh << "x" << c.kw << " s" << c.sh << "x" << c.sw << " p" << c.ph
              << "x" << c.pw << " ceil " << c.ceil << " include_pad " << include_pad;
        }
      }
    }
  }
}

TEST_P(Pool, RandomConfigurationsMatchReference) {
  std::mt19937_64 rng(testing::kSeed + 104);
  for (const auto& c : random_pool_cases(rng, 40)) {
    for (DType dt : {DType::float32, DType::float64}) {
      const Tensor x = random_tensor(c.shape, rng, opts(dt, GetParam()), -2, 2);
      const auto xv = x.to_vector<double>();
      for (bool include_pad : {true, false}) {
        const RefPool r = ref_pool(xv, c, include_pad);
        const Tensor mx = max_pool2d(testing::noncontiguous(x), params_of(c, include_pad));
        const Tensor av = avg_pool2d(x, params_of(c, include_pad));
        ASSERT_EQ(mx.shape(), r.shape) << c.shape << " k" << c.kh << "x" << c.kw << " s" << c.sh << "x" << c.sw
                                       << " p" << c.ph << "x" << c.pw << " ceil " << c.ceil;
        EXPECT_TRUE(all_close(mx, r.max, 0, 0)) << c.shape;
        EXPECT_TRUE(all_close(av, r.avg, testing::tol_for(dt), testing::tol_for(dt))) << c.shape;
      }
    }
  }
}

TEST_P(Pool, MaxPoolGradientGoesToTheArgmax) {
  std::mt19937_64 rng(testing::kSeed + 101);
  for (const auto& c : pool_cases()) {
    Tensor x = testing::distinct_tensor(c.shape, rng, opts(DType::float64, GetParam()).requires_grad());
    const RefPool r = ref_pool(x.detach().to_vector<double>(), c, true);
    const Tensor g = random_tensor(r.shape, rng, opts(DType::float64, GetParam()));
    max_pool2d(x, params_of(c, true)).backward(g);
    std::vector<double> want(static_cast<std::size_t>(c.shape.numel()), 0.0);
    const auto gv = g.to_vector<double>();
    for (std::size_t o = 0; o < r.argmax.size(); ++o) want[static_cast<std::size_t>(r.argmax[o])] += gv[o];
    EXPECT_TRUE(all_close(x.grad(), want, 1e-12, 1e-12)) << c.shape;
  }
}

TEST_P(Pool, GradientsPassGradcheck) {
  std::mt19937_64 rng(testing::kSeed + 102);
  for (const auto& c : pool_cases()) {
    const TensorOptions o = opts(DType::float64, GetParam()).requires_grad();
    const Tensor x = testing::distinct_tensor(c.shape, rng, o);
    for (bool include_pad : {true, false}) {
      const Pool2dParams p = params_of(c, include_pad);
      EXPECT_TRUE(grad_ok([&](const auto& in) { return avg_pool2d(in[0], p); }, {x})) << c.shape;
    }
    EXPECT_TRUE(grad_ok([&](const auto& in) { return max_pool2d(in[0], params_of(c, true)); }, {x})) << c.shape;
    // Through a non-contiguous view of the input.
    EXPECT_TRUE(grad_ok([&](const auto& in) { return max_pool2d(in[0].transpose(2, 3), params_of(c, true)); }, {x}));
  }
}

TEST_P(Pool, GlobalAveragePool) {
  std::mt19937_64 rng(testing::kSeed + 103);
  for (DType dt : {DType::float32, DType::float64}) {
    for (const Shape& s : {Shape{1, 1, 1, 1}, Shape{2, 3, 5, 7}, Shape{1, 4, 6, 3}}) {
      Tensor x = random_tensor(s, rng, opts(dt, GetParam()));
      const auto v = x.to_vector<double>();
      std::vector<double> want;
      const std::int64_t plane = s[2] * s[3];
      for (std::int64_t p = 0; p < s[0] * s[1]; ++p) {
        double acc = 0;
        for (std::int64_t i = 0; i < plane; ++i) acc += v[static_cast<std::size_t>(p * plane + i)];
        want.push_back(acc / static_cast<double>(plane));
      }
      const Tensor y = global_avg_pool2d(testing::noncontiguous(x));
      EXPECT_EQ(y.shape(), (Shape{s[0], s[1], 1, 1}));
      EXPECT_TRUE(all_close(y, want, testing::tol_for(dt), testing::tol_for(dt)));
    }
  }
  const Tensor x = random_tensor({2, 3, 4, 5}, rng, opts(DType::float64, GetParam()).requires_grad());
  EXPECT_TRUE(grad_ok([](const auto& in) { return global_avg_pool2d(in[0]); }, {x}));
}

TEST_P(Pool, NaNWinsTheMaximum) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = from_vector(std::vector<double>{1, nan, 3, 4}, {1, 1, 2, 2}, GetParam());
  EXPECT_TRUE(std::isnan(max_pool2d(x, Pool2dParams(2)).item()));
}

TEST_P(Pool, BadArgumentsAreClearErrors) {
  using testing::throws_with;
  const Tensor x = zeros({1, 2, 4, 4}, GetParam());
  EXPECT_TRUE(throws_with([&] { max_pool2d(x, Pool2dParams(2).padding(2)); }, {"max_pool2d", "at most half"}));
  EXPECT_TRUE(throws_with([&] { avg_pool2d(x, Pool2dParams(5)); }, {"avg_pool2d", "too small", "[1, 2, 4, 4]"}));
  EXPECT_TRUE(throws_with([&] { max_pool2d(zeros({2, 4, 4}, GetParam()), Pool2dParams(2)); }, {"4 dims", "[2, 4, 4]"}));
  EXPECT_TRUE(throws_with([&] { max_pool2d(x, Pool2dParams(0)); }, {"kernel size must be positive"}));
  EXPECT_TRUE(throws_with([&] { max_pool2d(x, Pool2dParams(2).stride(-1)); }, {"stride"}));
  EXPECT_TRUE(throws_with([&] { global_avg_pool2d(zeros({2, 3}, GetParam())); }, {"global_avg_pool2d", "[2, 3]"}));
  EXPECT_TRUE(throws_with([&] { max_pool2d(zeros({1, 1, 2, 2}, TensorOptions(DType::int64).device(GetParam())), Pool2dParams(2)); },
                          {"max_pool2d", "int64"}));
}

// The cpu's 2x2 stride-2 max pool against its generic twin, bit for bit, on
// odd and even sizes (floor mode drops the last row or column), with ties,
// -inf everywhere in some windows, and NaNs, in float and double: each ISA
// copy this CPU runs, against the baseline copy's generic loop.
template <typename T>
struct PoolCopy {
  const char* isa;
  void (*two_by_two)(const T*, T*, std::int64_t*, const cpu::PoolGeometry&);
};

template <typename T>
std::vector<PoolCopy<T>> runnable_pool_copies() {
  std::vector<PoolCopy<T>> copies{{"baseline", &cpu::isa_baseline::max_pool2d_2x2s2<T>}};
#if defined(__x86_64__)
  if (cpu::best_cpu_isa() >= cpu::CpuIsa::avx2) copies.push_back({"avx2", &cpu::isa_avx2::max_pool2d_2x2s2<T>});
  if (cpu::best_cpu_isa() >= cpu::CpuIsa::avx512) copies.push_back({"avx512", &cpu::isa_avx512::max_pool2d_2x2s2<T>});
#endif
  return copies;
}

template <typename T>
void check_2x2_matches_generic(std::int64_t planes, std::int64_t H, std::int64_t W, std::uint64_t seed) {
  const cpu::PoolGeometry g{planes, H, W, H / 2, W / 2};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(0, 19);
  std::vector<T> x(static_cast<std::size_t>(planes * H * W));
  for (T& v : x) {
    const int k = pick(rng);
    // Few distinct values make ties common; the rest are the special cases.
    v = k < 14 ? T(k % 4) : k < 17 ? -std::numeric_limits<T>::infinity()
                          : k < 19 ? std::numeric_limits<T>::quiet_NaN() : T(-1);
  }
  const std::size_t outs = static_cast<std::size_t>(planes * g.OH * g.OW);
  std::vector<T> y_ref(outs), y(outs);
  std::vector<std::int64_t> a_ref(outs), a(outs);
  PoolWindow w;
  w.kernel_h = w.kernel_w = w.stride_h = w.stride_w = 2;
  cpu::isa_baseline::max_pool2d_generic(x.data(), y_ref.data(), a_ref.data(), g, w);
  for (const PoolCopy<T>& copy : runnable_pool_copies<T>()) {
    copy.two_by_two(x.data(), y.data(), a.data(), g);
    for (std::size_t i = 0; i < outs; ++i) {
      const bool same = std::isnan(y_ref[i]) ? std::isnan(y[i]) : y[i] == y_ref[i];
      ASSERT_TRUE(same) << copy.isa << ": output " << i << " of " << planes << "x" << H << "x" << W << ": " << y[i]
                        << " vs generic " << y_ref[i];
      ASSERT_EQ(a[i], a_ref[i]) << copy.isa << ": argmax of output " << i << " of " << planes << "x" << H << "x" << W;
    }
  }
}

TEST(CpuMaxPool2x2, MatchesTheGenericLoopBitForBit) {
  std::uint64_t seed = testing::kSeed;
  for (auto [planes, H, W] : {std::array<std::int64_t, 3>{1, 2, 2}, {3, 5, 7}, {7, 28, 28}, {2, 13, 30},
                              {64, 15, 15}, {5, 2, 9}, {300, 32, 32}}) {
    check_2x2_matches_generic<float>(planes, H, W, ++seed);
    check_2x2_matches_generic<double>(planes, H, W, ++seed);
  }
  EXPECT_TRUE(cpu::is_2x2_stride_2([] {
    PoolWindow w;
    w.kernel_h = w.kernel_w = w.stride_h = w.stride_w = 2;
    return w;
  }()));
  PoolWindow padded;
  padded.kernel_h = padded.kernel_w = padded.stride_h = padded.stride_w = 2;
  padded.pad_h = 1;
  EXPECT_FALSE(cpu::is_2x2_stride_2(padded));
}

INSTANTIATE_TEST_SUITE_P(Devices, Pool, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
