// Raw tests of the softmax family (kernels/softmax.cu) through GpuBackend:
// softmax / log-softmax forward and backward along every dim and cross-entropy
// forward and backward, every version against a float64 reference and against
// v1, covering each mapping (thread per row, warp rows, block rows, columns),
// huge logits, -inf masks, rows of one element, and several sim schedules.
#include <cmath>
#include <limits>

#include "convkit/sim/schedule.h"
#include "gpu/gpu_testing.h"
#include "kernels/softmax.cuh"

namespace convkit {
namespace {

using testing::all_close;
using testing::gpu_devices;
using testing::ScopedKernelVersion;
namespace kernels = convkit::gpu_sim;

constexpr int kVersions = 2;
const double kInf = std::numeric_limits<double>::infinity();

TensorOptions on(Device d, DType dt) { return TensorOptions().dtype(dt).device(d); }

struct Rows {
  std::int64_t outer = 1, n = 1, inner = 1;
  Rows(const Shape& s, std::int64_t dim) {
    for (std::int64_t d = 0; d < dim; ++d) outer *= s[static_cast<std::size_t>(d)];
    n = s[static_cast<std::size_t>(dim)];
    for (std::int64_t d = dim + 1; d < s.rank(); ++d) inner *= s[static_cast<std::size_t>(d)];
  }
  std::size_t at(std::int64_t o, std::int64_t k, std::int64_t j) const {
    return static_cast<std::size_t>((o * n + k) * inner + j);
  }
};

std::vector<double> ref_softmax(const std::vector<double>& x, const Rows& r, bool log) {
  std::vector<double> y(x.size());
  for (std::int64_t o = 0; o < r.outer; ++o)
    for (std::int64_t j = 0; j < r.inner; ++j) {
      double mx = -kInf, sum = 0;
      for (std::int64_t k = 0; k < r.n; ++k) mx = std::max(mx, x[r.at(o, k, j)]);
      for (std::int64_t k = 0; k < r.n; ++k) sum += std::exp(x[r.at(o, k, j)] - mx);
      for (std::int64_t k = 0; k < r.n; ++k) {
        const double v = x[r.at(o, k, j)] - mx;
        y[r.at(o, k, j)] = log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  return y;
}

std::vector<double> ref_softmax_backward(const std::vector<double>& g, const std::vector<double>& y, const Rows& r,
                                         bool log) {
  std::vector<double> out(g.size());
  for (std::int64_t o = 0; o < r.outer; ++o)
    for (std::int64_t j = 0; j < r.inner; ++j) {
      double dot = 0;
      for (std::int64_t k = 0; k < r.n; ++k) dot += log ? g[r.at(o, k, j)] : g[r.at(o, k, j)] * y[r.at(o, k, j)];
      for (std::int64_t k = 0; k < r.n; ++k) {
        const std::size_t i = r.at(o, k, j);
        out[i] = log ? g[i] - std::exp(y[i]) * dot : y[i] * (g[i] - dot);
      }
    }
  return out;
}

Tensor softmax_on(const Tensor& x, std::int64_t dim, bool log) {
  Tensor y = empty(x.shape(), on(x.device(), x.dtype()));
  backend_for(x.device()).softmax_forward(x, dim, log, y);
  return y;
}

Tensor softmax_backward_on(const Tensor& g, const Tensor& y, std::int64_t dim, bool log) {
  Tensor gi = empty(y.shape(), on(y.device(), y.dtype()));
  backend_for(y.device()).softmax_backward(g, y, dim, log, gi);
  return gi;
}

// Float32 sums of n terms stay within about n * eps of exact (v1 adds serially);
// float64 far tighter.
double tolerance(DType dt, std::int64_t n) {
  return dt == DType::float32 ? 2e-5 + static_cast<double>(n) * 2e-8 : 1e-12;
}

// Odd sizes along each mapping: rows of 1, short rows (warp rows), rows longer
// than 1024 (block rows), and rows across an inner dim (columns).
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {{6}, {1, 10}, {3, 5}, {2, 3, 4}, {2, 70, 3, 1}, {1, 3, 5, 67}, {5, 1}, {3, 1500},
                                       {2, 1100, 3}};
  return s;
}

class GpuSoftmax : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { kernels::softmax_kernel_version(); }  // registers the family
};

TEST_P(GpuSoftmax, ForwardAndBackwardEveryDimEveryVersion) {
  std::mt19937_64 rng(testing::kSeed + 910);
  for (DType dt : {DType::float32, DType::float64})
    for (const Shape& s : shapes())
      for (bool huge : {false, true}) {
        // Logits around 1000 overflow exp unless the maximum is subtracted first.
        const Tensor x = testing::random_tensor(s, rng, on(GetParam(), dt), huge ? 995 : -4, huge ? 1005 : 4);
        const Tensor g = testing::random_tensor(s, rng, on(GetParam(), dt));
        const auto xv = x.to_vector<double>(), gv = g.to_vector<double>();
        for (std::int64_t dim = 0; dim < s.rank(); ++dim)
          for (bool log : {false, true}) {
            const Rows r(s, dim);
            SCOPED_TRACE(::testing::Message() << s << " dim " << dim << (log ? " log" : "") << (huge ? " huge " : " ")
                                              << dtype_name(dt));
            const auto want = ref_softmax(xv, r, log);
            const double tol = tolerance(dt, r.n);  // x - max is exact in float even near 1000
            std::vector<double> y1, gi1;
            for (int version = 1; version <= kVersions; ++version) {
              SCOPED_TRACE("version " + std::to_string(version));
              ScopedKernelVersion scoped("softmax", version);
              const Tensor y = softmax_on(x, dim, log);
              ASSERT_TRUE(all_close(y, want, tol, tol));
              // The backward from this version's y, against the reference applied to the same y.
              const auto yv = y.to_vector<double>();
              const auto gi = softmax_backward_on(g, y, dim, log).to_vector<double>();
              ASSERT_TRUE(all_close(gi, ref_softmax_backward(gv, yv, r, log), tol * 4, tol * 4));
              if (version == 1) {
                y1 = yv;
                gi1 = gi;
              } else {
                ASSERT_TRUE(all_close(yv, y1, 2 * tol, 2 * tol)) << "against v1";
              }
            }
          }
      }
}

TEST_P(GpuSoftmax, MaskedAndInfiniteRowsMatchTheCpuBackend) {
  // -inf entries (masks) give 0 probability; a row of -inf only is NaN, as on
  // the cpu; one element per row gives 1 (or 0 in log space).
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{5}, std::int64_t{40}, std::int64_t{1500}}) {
    std::vector<double> v(static_cast<std::size_t>(3 * n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 7) - 3;
    for (std::int64_t k = 0; k < n; k += 2) v[static_cast<std::size_t>(k)] = -kInf;  // row 0: every other one
    if (n > 1) v[static_cast<std::size_t>(n - 1)] = 2;                                // ... and one finite at least
    for (std::int64_t k = 0; k < n; ++k) v[static_cast<std::size_t>(n + k)] = -kInf;  // row 1: all -inf
    for (DType dt : {DType::float32, DType::float64}) {
      const Tensor x = from_vector(v, {3, n}, on(GetParam(), dt));
      for (bool log : {false, true}) {
        const auto cpu = softmax_on(x.to(Device("cpu")), 1, log).to_vector<double>();
        for (int version = 1; version <= kVersions; ++version) {
          ScopedKernelVersion scoped("softmax", version);
          const auto got = softmax_on(x, 1, log).to_vector<double>();
          for (std::size_t i = 0; i < got.size(); ++i) {
            if (std::isnan(cpu[i]) || std::isinf(cpu[i])) {
              EXPECT_EQ(std::isnan(got[i]), std::isnan(cpu[i])) << "n " << n << " element " << i << " v" << version;
              if (!std::isnan(cpu[i])) {
                EXPECT_EQ(got[i], cpu[i]) << "n " << n << " element " << i;
              }
            } else {
              EXPECT_NEAR(got[i], cpu[i], 1e-5) << "n " << n << " element " << i << " v" << version;
            }
          }
        }
      }
    }
  }
}

// Per-sample cross-entropy with label smoothing s, from the definition.
std::vector<double> ref_cross_entropy(const std::vector<double>& x, const std::vector<std::int64_t>& t,
                                      std::int64_t C, double s, std::vector<double>* lse_out) {
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
    lse_out->push_back(lse);
  }
  return out;
}

TEST_P(GpuSoftmax, CrossEntropyForwardAndBackwardEveryVersion) {
  std::mt19937_64 rng(testing::kSeed + 911);
  const Device dev = GetParam();
  for (DType dt : {DType::float32, DType::float64})
    for (auto [N, C] : {std::pair<std::int64_t, std::int64_t>{1, 5}, {7, 3}, {16, 10}, {3, 1}, {5, 37}, {2, 1500}}) {
      std::uniform_int_distribution<std::int64_t> cls(0, C - 1);
      std::vector<std::int64_t> tv(static_cast<std::size_t>(N));
      for (auto& e : tv) e = cls(rng);
      const Tensor t = from_vector(tv, {N}, on(dev, DType::int64));
      for (bool huge : {false, true}) {
        const Tensor x = testing::random_tensor({N, C}, rng, on(dev, dt), huge ? -500 : -3, huge ? 500 : 3);
        const Tensor gl = testing::random_tensor({N}, rng, on(dev, dt), 0.5, 2);
        const auto xv = x.to_vector<double>(), glv = gl.to_vector<double>();
        for (double s : {0.0, 0.1, 1.0}) {
          SCOPED_TRACE(::testing::Message() << "N " << N << " C " << C << " smoothing " << s
                                            << (huge ? " huge " : " ") << dtype_name(dt));
          std::vector<double> lse_want;
          const auto want = ref_cross_entropy(xv, tv, C, s, &lse_want);
          const double tol = dt == DType::float32 ? (huge ? 1e-4 : 2e-5) : 1e-11;
          std::vector<double> grad_want(static_cast<std::size_t>(N * C));
          for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t c = 0; c < C; ++c) {
              const auto i = static_cast<std::size_t>(n * C + c);
              const double q = (c == tv[static_cast<std::size_t>(n)] ? 1 - s : 0) + s / static_cast<double>(C);
              grad_want[i] = glv[static_cast<std::size_t>(n)] * (std::exp(xv[i] - lse_want[static_cast<std::size_t>(n)]) - q);
            }
          for (int version = 1; version <= kVersions; ++version) {
            SCOPED_TRACE("version " + std::to_string(version));
            ScopedKernelVersion scoped("softmax", version);
            Tensor loss = empty({N}, on(dev, dt)), lse = empty({N}, on(dev, dt));
            backend_for(dev).cross_entropy_forward(x, t, s, loss, lse);
            ASSERT_TRUE(all_close(loss, want, tol, tol));
            ASSERT_TRUE(all_close(lse, lse_want, tol, tol));
            Tensor grad = empty({N, C}, on(dev, dt));
            backend_for(dev).cross_entropy_backward(x, t, lse, gl, s, grad);
            // The gradient uses this lse, rounded to T (1000 logits: 3e-5 in float32).
            ASSERT_TRUE(all_close(grad, grad_want, tol, tol));
          }
        }
      }
    }
}

TEST(GpuSoftmaxPlan, MappingsFollowTheRowShape) {
  using M = kernels::SoftmaxMapping;
  EXPECT_EQ(kernels::softmax_forward_mapping(10, 1, 1), M::thread_per_row);
  EXPECT_EQ(kernels::softmax_forward_mapping(10, 1, 2), M::warp_rows);
  EXPECT_EQ(kernels::softmax_forward_mapping(1024, 1, 2), M::warp_rows);
  EXPECT_EQ(kernels::softmax_forward_mapping(1025, 1, 2), M::block_rows);
  EXPECT_EQ(kernels::softmax_forward_mapping(10, 3, 2), M::columns);
  EXPECT_EQ(kernels::softmax_backward_mapping(10, 3, 2), M::thread_per_row);
  EXPECT_EQ(kernels::softmax_backward_mapping(1500, 1, 2), M::block_rows);
  EXPECT_EQ(kernels::cross_entropy_mapping(1500, 2), M::block_rows);
  EXPECT_EQ(kernels::cross_entropy_mapping(10, 1), M::thread_per_row);
  EXPECT_THROW(kernels::softmax_forward_mapping(10, 1, 3), Error);
}

TEST(GpuSoftmaxSchedules, WarpAndBlockRowsUnderReverseAndRandomOrders) {
  kernels::softmax_kernel_version();
  std::mt19937_64 rng(testing::kSeed + 912);
  const Device dev("sim");
  for (const char* schedule : {"reverse", "random:11"}) {
    sim::ScopedSchedule scoped(sim::Schedule::parse(schedule));
    ScopedKernelVersion v2("softmax", 2);
    for (const Shape& s : {Shape{3, 40}, Shape{2, 1500}}) {
      SCOPED_TRACE(::testing::Message() << schedule << " " << s);
      const Tensor x = testing::random_tensor(s, rng, on(dev, DType::float64), -4, 4);
      const Tensor g = testing::random_tensor(s, rng, on(dev, DType::float64));
      const Rows r(s, 1);
      const auto y = softmax_on(x, 1, false);
      EXPECT_TRUE(all_close(y, ref_softmax(x.to_vector<double>(), r, false), 1e-12, 1e-12));
      EXPECT_TRUE(all_close(softmax_backward_on(g, y, 1, false),
                            ref_softmax_backward(g.to_vector<double>(), y.to_vector<double>(), r, false), 1e-12,
                            1e-12));
      std::vector<std::int64_t> tv(static_cast<std::size_t>(s[0]), 1);
      std::vector<double> lse_want;
      const auto want = ref_cross_entropy(x.to_vector<double>(), tv, s[1], 0.1, &lse_want);
      Tensor loss = empty({s[0]}, on(dev, DType::float64)), lse = empty({s[0]}, on(dev, DType::float64));
      backend_for(dev).cross_entropy_forward(x, from_vector(tv, {s[0]}, on(dev, DType::int64)), 0.1, loss, lse);
      EXPECT_TRUE(all_close(loss, want, 1e-12, 1e-12));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, GpuSoftmax, ::testing::ValuesIn(gpu_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
