// Raw tests of the pooling kernels (kernels/pooling.cu) on sim: every forward
// version and the backward gather against a float64 reference that walks each
// window explicitly, and bit for bit against the cpu backend (same window
// scan, same summation order), over odd shapes, batch 1, overlapping windows
// (stride < kernel), gaps (stride > kernel), padding, ceil_mode overhangs,
// ties, NaN and -inf, under the forward, reverse and random sim schedules.
#include <cmath>
#include <cstring>
#include <limits>

#include "convkit/sim/schedule.h"
#include "gpu/gpu_testing.h"
#include "kernels/pooling.cuh"

namespace convkit {
namespace {

namespace kernels = convkit::gpu_sim;
using testing::all_close;

struct Case {
  std::int64_t N, C, H, W, kh, kw, sh, sw, ph, pw;
  bool ceil;
};

std::int64_t pooled(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, bool ceil_mode) {
  const double q = static_cast<double>(in + 2 * p - k) / static_cast<double>(s);
  auto out = static_cast<std::int64_t>(ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

const std::vector<Case> kCases = {
    {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, false},    // a single element
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, false},    // the common 2x2/2
    {1, 2, 9, 11, 3, 3, 2, 2, 1, 1, false},   // overlapping 3x3/2, padding (ResNet stem)
    {3, 1, 7, 5, 3, 3, 1, 1, 1, 1, false},    // stride 1: every input in up to 9 windows
    {1, 3, 10, 13, 3, 2, 2, 1, 1, 1, true},   // non-square, ceil_mode overhang
    {2, 1, 9, 9, 2, 2, 3, 3, 0, 0, true},     // stride > kernel: gaps, ceil_mode
    {1, 1, 5, 37, 2, 3, 1, 2, 1, 1, true},    // wider than one 32-column tile
    {1, 2, 19, 3, 4, 1, 3, 1, 2, 0, false},   // taller than one 8-row tile, 1-wide window
    {1, 1, 6, 6, 6, 6, 6, 6, 0, 0, false},    // global window
    {1, 1, 14, 40, 12, 12, 12, 12, 6, 6, true},  // a patch too big for v2's shared memory
};

PoolWindow window_of(const Case& c, bool include_pad) {
  PoolWindow w;
  w.kernel_h = c.kh;
  w.kernel_w = c.kw;
  w.stride_h = c.sh;
  w.stride_w = c.sw;
  w.pad_h = c.ph;
  w.pad_w = c.pw;
  w.count_include_pad = include_pad;
  return w;
}

kernels::PoolShape shape_of(const Case& c) {
  return {c.N * c.C, c.H, c.W, pooled(c.H, c.kh, c.sh, c.ph, c.ceil), pooled(c.W, c.kw, c.sw, c.pw, c.ceil)};
}

// Float64 reference over every kernel offset, padding included: the max scan
// with torch's rule (v > best or v is NaN), the clipped or padded divisor,
// and both backward passes as scatters.
struct Reference {
  std::vector<double> max, avg, max_grad, avg_grad;
  std::vector<std::int64_t> argmax;
};
Reference reference(const std::vector<double>& x, const std::vector<double>& grad_out, const Case& c,
                    bool include_pad) {
  const kernels::PoolShape s = shape_of(c);
  const auto n_out = static_cast<std::size_t>(s.planes * s.OH * s.OW);
  Reference r{std::vector<double>(n_out), std::vector<double>(n_out), std::vector<double>(x.size(), 0.0),
              std::vector<double>(x.size(), 0.0), std::vector<std::int64_t>(n_out)};
  for (std::int64_t p = 0; p < s.planes; ++p)
    for (std::int64_t oh = 0; oh < s.OH; ++oh)
      for (std::int64_t ow = 0; ow < s.OW; ++ow) {
        const auto o = static_cast<std::size_t>((p * s.OH + oh) * s.OW + ow);
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        std::int64_t best_i = -1, inside = 0, in_padded = 0;
        std::vector<std::int64_t> members;
        for (std::int64_t i = 0; i < c.kh; ++i)
          for (std::int64_t j = 0; j < c.kw; ++j) {
            const std::int64_t h = oh * c.sh - c.ph + i, w = ow * c.sw - c.pw + j;
            // Windows never start before -pad; the padded input ends at size + pad.
            if (h < c.H + c.ph && w < c.W + c.pw) ++in_padded;
            if (h < 0 || h >= c.H || w < 0 || w >= c.W) continue;
            const double v = x[static_cast<std::size_t>((p * c.H + h) * c.W + w)];
            if (best_i < 0) best_i = h * c.W + w;  // an all -inf window keeps its first element
            if (v > best || std::isnan(v)) {
              best = v;
              best_i = h * c.W + w;
            }
            sum += v;
            ++inside;
            members.push_back((p * c.H + h) * c.W + w);
          }
        const std::int64_t divisor = include_pad ? in_padded : inside;
        r.max[o] = best;
        r.argmax[o] = best_i;
        r.avg[o] = divisor > 0 ? sum / static_cast<double>(divisor) : 0.0;
        r.max_grad[static_cast<std::size_t>(p * c.H * c.W + best_i)] += grad_out[o];
        for (std::int64_t m : members)
          r.avg_grad[static_cast<std::size_t>(m)] += grad_out[o] / static_cast<double>(divisor);
      }
  return r;
}

std::vector<double> random_values(std::size_t n, std::mt19937_64& rng, bool ties) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int> small(0, 2);
  std::vector<double> v(n);
  for (double& e : v) e = ties ? small(rng) : u(rng);
  return v;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <typename T>
std::vector<double> widen(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// Bitwise equality, NaN included.
template <typename T>
::testing::AssertionResult same_bits(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0)
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

// The cpu backend's results for the same inputs.
template <typename T>
struct CpuResult {
  std::vector<T> max, avg, max_grad, avg_grad;
  std::vector<std::int64_t> argmax;
};
template <typename T>
CpuResult<T> cpu_pool(const std::vector<double>& x, const std::vector<double>& grad_out, const Case& c,
                      bool include_pad) {
  const kernels::PoolShape s = shape_of(c);
  const TensorOptions o = TensorOptions().dtype(dtype_of<T>::value);
  const Shape in{c.N, c.C, c.H, c.W}, out{c.N, c.C, s.OH, s.OW};
  Backend& cpu = backend_for(Device(DeviceType::cpu));
  const PoolWindow w = window_of(c, include_pad);
  const Tensor xt = from_vector(x, in, o), gt = from_vector(grad_out, out, o);
  Tensor mx = Tensor::empty(out, o), av = Tensor::empty(out, o), am = Tensor::empty(out, TensorOptions().dtype(DType::int64));
  Tensor mg = Tensor::empty(in, o), ag = Tensor::empty(in, o);
  cpu.max_pool2d_forward(xt, mx, am, w);
  cpu.avg_pool2d_forward(xt, av, w);
  cpu.max_pool2d_backward(gt, am, mg, w);
  cpu.avg_pool2d_backward(gt, ag, w);
  return {mx.to_vector<T>(), av.to_vector<T>(), mg.to_vector<T>(), ag.to_vector<T>(), am.to_vector<std::int64_t>()};
}

template <typename T>
void check_case(const Case& c, bool include_pad, int version, std::mt19937_64& rng, bool ties,
                bool specials) {
  const kernels::PoolShape s = shape_of(c);
  const DType dt = dtype_of<T>::value;
  const PoolWindow w = window_of(c, include_pad);
  std::vector<double> x = random_values(static_cast<std::size_t>(c.N * c.C * c.H * c.W), rng, ties);
  if (specials) {  // NaNs (the last one wins) and -inf (never above best, but a valid winner)
    for (std::size_t i = 0; i < x.size(); i += 7) x[i] = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t i = 3; i < x.size(); i += 5) x[i] = -std::numeric_limits<double>::infinity();
  }
  const std::vector<double> grad_out = random_values(static_cast<std::size_t>(s.planes * s.OH * s.OW), rng, false);
  const std::vector<T> xt = cast<T>(x), gt = cast<T>(grad_out);
  // Rounded inputs, so the reference sees exactly what the kernels see.
  const Reference ref = reference(widen(xt), widen(gt), c, include_pad);
  const CpuResult<T> cpu = cpu_pool<T>(widen(xt), widen(gt), c, include_pad);

  std::vector<T> mx(ref.max.size()), av(ref.avg.size()), mg(x.size(), T(-7)), ag(x.size(), T(-7));
  std::vector<std::int64_t> am(ref.argmax.size(), -1);
  kernels::launch_max_pool2d_forward(dt, xt.data(), mx.data(), am.data(), s, w, version);
  kernels::launch_avg_pool2d_forward(dt, xt.data(), av.data(), s, w, version);
  kernels::launch_max_pool2d_backward(dt, gt.data(), am.data(), mg.data(), s, w);
  kernels::launch_avg_pool2d_backward(dt, gt.data(), ag.data(), s, w);

  const double tol = dt == DType::float32 ? 2e-6 : 1e-13;
  EXPECT_EQ(am, ref.argmax);
  EXPECT_EQ(am, cpu.argmax);
  EXPECT_TRUE(same_bits(mx, cpu.max));
  EXPECT_TRUE(same_bits(av, cpu.avg));
  EXPECT_TRUE(same_bits(mg, cpu.max_grad));
  EXPECT_TRUE(same_bits(ag, cpu.avg_grad));
  if (!specials) {
    EXPECT_TRUE(all_close(widen(mx), ref.max, 0, 0));
    EXPECT_TRUE(all_close(widen(av), ref.avg, tol, tol));
    EXPECT_TRUE(all_close(widen(mg), ref.max_grad, tol, tol));
    EXPECT_TRUE(all_close(widen(ag), ref.avg_grad, tol, tol));
  }
}

class GpuPooling : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuPooling, EveryVersionMatchesReferenceAndCpuBitForBit) {
  sim::ScopedSchedule schedule(sim::Schedule::parse(GetParam()));
  std::mt19937_64 rng(testing::kSeed + 700);
  for (const Case& c : kCases) {
    for (int version : {1, 2}) {
      if (version == 2 && !kernels::pool2d_tiled_can_implement(DType::float64, window_of(c, true))) continue;
      for (bool include_pad : {true, false}) {
        SCOPED_TRACE(::testing::Message() << "case " << c.N << "x" << c.C << "x" << c.H << "x" << c.W << " k "
                                          << c.kh << "x" << c.kw << " s " << c.sh << "x" << c.sw << " p " << c.ph
                                          << "x" << c.pw << (c.ceil ? " ceil" : "") << " v" << version
                                          << (include_pad ? " include_pad" : ""));
        check_case<float>(c, include_pad, version, rng, false, false);
        check_case<double>(c, include_pad, version, rng, false, false);
        check_case<float>(c, include_pad, version, rng, true, false);  // ties: the first maximum wins
        check_case<double>(c, include_pad, version, rng, false, true);
      }
    }
  }
}

TEST_P(GpuPooling, DefaultChoiceRunsEveryShape) {
  sim::ScopedSchedule schedule(sim::Schedule::parse(GetParam()));
  std::mt19937_64 rng(testing::kSeed + 701);
  for (const Case& c : kCases) check_case<float>(c, true, 0, rng, false, false);
}

INSTANTIATE_TEST_SUITE_P(sim, GpuPooling, ::testing::Values("forward", "reverse", "random:7"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "random:7" ? std::string("random") : info.param;
                         });

// More planes than forward v2 launches blocks for (about 1024): each block
// then pools several planes in turn, through both of its barriers.
TEST_P(GpuPooling, TiledBlocksWalkSeveralPlanes) {
  sim::ScopedSchedule schedule(sim::Schedule::parse(GetParam()));
  std::mt19937_64 rng(testing::kSeed + 703);
  check_case<float>({1031, 1, 5, 5, 3, 3, 2, 2, 1, 1, false}, true, 2, rng, false, false);
}

TEST(GpuPoolingChecks, VersionsAndLimitsAreClearErrors) {
  kernels::register_pooling_kernels();
  const Case big = kCases.back();
  const PoolWindow w = window_of(big, true);
  EXPECT_FALSE(kernels::pool2d_tiled_can_implement(DType::float32, w));
  EXPECT_TRUE(kernels::pool2d_tiled_can_implement(DType::float32, window_of(kCases[2], true)));
  std::vector<float> x(static_cast<std::size_t>(big.H * big.W)), out(64);
  std::vector<std::int64_t> am(64);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string too_big = message(
      [&] { kernels::launch_max_pool2d_forward(DType::float32, x.data(), out.data(), am.data(), shape_of(big), w, 2); });
  EXPECT_NE(too_big.find("shared memory"), std::string::npos) << too_big;
  EXPECT_NE(too_big.find("use v1"), std::string::npos) << too_big;
  const std::string bad_version = message(
      [&] { kernels::launch_avg_pool2d_forward(DType::float32, x.data(), out.data(), shape_of(big), w, 3); });
  EXPECT_NE(bad_version.find("versions 1..2"), std::string::npos) << bad_version;
  const std::string bad_dtype = message(
      [&] { kernels::launch_avg_pool2d_forward(DType::int64, x.data(), out.data(), shape_of(big), w, 1); });
  EXPECT_NE(bad_dtype.find("int64"), std::string::npos) << bad_dtype;
  // The family registry drives the default: v1 forced by set_kernel_version still matches.
  testing::ScopedKernelVersion v1("pool2d_forward", 1);
  std::mt19937_64 rng(testing::kSeed + 702);
  check_case<float>(kCases[2], true, 0, rng, false, false);
}

}  // namespace
}  // namespace convkit
