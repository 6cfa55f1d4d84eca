// Raw tests of the GEMM kernels (kernels/gemm.cu) on sim (and, in the nvcc build, on cuda): every
// version against a float64 reference and against v1, for every transpose
// pair, M, N, K in {1, 7, 16, 33, 65, 128}, several alpha/beta, batches with
// broadcast operands, padded leading dims, gaps between batches, unaligned
// pointers (v3's scalar path) and aligned ones (its vector path); memory
// around C must stay untouched. Also the argument checks and version routing;
// for the warp-tiled versions (v4-v7) odd shapes, the dense layers of
// cifar10-cnn and resnet18, the shape rules, split-K's determinism and the
// sim profile's bank-conflict and sector counts.
#include <cmath>
#include <limits>

#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "convkit/sim/schedule.h"
#include "gpu/gpu_testing.h"
#include "kernels/gemm.cuh"

namespace convkit {
namespace {

namespace kernels = convkit::CK_GPU_NS;
using testing::kernel_options;
using kernels::GemmArgs;

constexpr int kOurVersions = kernels::kGemmCublasVersion - 1;  // cuBLAS is cuda only
constexpr int kWarpTiled[] = {kernels::kGemmWarpTiledVersion, kernels::kGemmPipelinedVersion,
                              kernels::kGemmPerShapeVersion, kernels::kGemmSplitKVersion,
                              kernels::kGemmWideThreadTileVersion};
const std::int64_t kSizes[] = {1, 7, 16, 33, 65, 128};

double epsilon(DType dt) {
  return dt == DType::float32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
}

// `count` row-major matrices of rows x cols with leading dim ld, `stride`
// elements apart, starting `offset` elements into a device buffer. The host
// copy holds the whole buffer, gaps included.
struct Operand {
  std::int64_t rows = 0, cols = 0, ld = 0, stride = 0, count = 1, offset = 0;
  std::vector<double> host;
  Tensor device;

  std::int64_t index(std::int64_t b, std::int64_t r, std::int64_t c) const {
    return offset + b * stride + r * ld + c;
  }
  const void* data() const { return static_cast<const unsigned char*>(device.raw_data()) + offset * dtype_size(device.dtype()); }
  void* data_mut() const { return static_cast<unsigned char*>(device.raw_data()) + offset * dtype_size(device.dtype()); }
};

// Values in [-1, 1) rounded to dt, or NaN everywhere (a C that beta == 0 must not read).
// The leading dim is cols + pad, or cols rounded up to a multiple of 4 plus pad.
Operand make_operand(std::int64_t rows, std::int64_t cols, std::int64_t pad, bool round_ld, std::int64_t count,
                     std::int64_t gap, std::int64_t offset, DType dt, std::mt19937_64& rng, bool nan = false) {
  Operand o;
  o.rows = rows, o.cols = cols, o.count = count, o.offset = offset;
  o.ld = (round_ld ? (cols + 3) / 4 * 4 : cols) + pad;
  o.stride = count == 1 ? 0 : rows * o.ld + gap;
  const std::int64_t total = offset + (count - 1) * o.stride + rows * o.ld + 1;
  std::uniform_real_distribution<double> u(-1, 1);
  o.host.resize(static_cast<std::size_t>(total));
  for (double& v : o.host) {
    v = nan ? std::numeric_limits<double>::quiet_NaN() : u(rng);
    if (dt == DType::float32) v = static_cast<float>(v);
  }
  o.device = from_vector(o.host, {total}, kernel_options(dt));
  return o;
}

struct Case {
  DType dt = DType::float32;
  std::int64_t M = 1, N = 1, K = 1, batch = 1;
  bool trans_a = false, trans_b = false;
  bool broadcast_a = false, broadcast_b = false;  // one matrix for the whole batch (stride 0)
  std::int64_t pad = 0, gap = 0, offset = 0;      // extra leading dim, batch gap, start offset (elements)
  bool round_ld = false;                          // leading dims rounded up to a multiple of 4 first
  double alpha = 1, beta = 0;
  std::string str() const {
    return detail::concat(dt, " M=", M, " N=", N, " K=", K, " batch=", batch, trans_a ? " At" : "",
                          trans_b ? " Bt" : "", broadcast_a ? " A-broadcast" : "", broadcast_b ? " B-broadcast" : "",
                          " pad=", pad, round_ld ? " (rounded ld)" : "", " gap=", gap, " offset=", offset, " alpha=", alpha, " beta=", beta);
  }
};

// One problem: its operands, the float64 reference and its error bound.
class Problem {
 public:
  Problem(const Case& c, std::mt19937_64& rng) : c_(c) {
    a_ = make_operand(c.trans_a ? c.K : c.M, c.trans_a ? c.M : c.K, c.pad, c.round_ld, c.broadcast_a ? 1 : c.batch,
                      c.gap, c.offset, c.dt, rng);
    b_ = make_operand(c.trans_b ? c.N : c.K, c.trans_b ? c.K : c.N, c.pad, c.round_ld, c.broadcast_b ? 1 : c.batch,
                      c.gap, c.offset, c.dt, rng);
    c_in_ = make_operand(c.M, c.N, c.pad, c.round_ld, c.batch, c.gap, c.offset, c.dt, rng, c.beta == 0);
    reference();
  }

  // The arguments with C in `out` (by default the problem's own C buffer).
  GemmArgs args(const Operand* out = nullptr) const {
    if (out == nullptr) out = &c_in_;
    GemmArgs g;
    g.M = c_.M, g.N = c_.N, g.K = c_.K, g.batch = c_.batch;
    g.trans_a = c_.trans_a, g.trans_b = c_.trans_b;
    g.a = a_.data(), g.lda = a_.ld, g.stride_a = a_.stride;
    g.b = b_.data(), g.ldb = b_.ld, g.stride_b = b_.stride;
    g.c = out->data_mut(), g.ldc = out->ld, g.stride_c = out->stride;
    g.alpha = c_.alpha, g.beta = c_.beta;
    return g;
  }

  // C after running `version`, read back whole (gaps included).
  std::vector<double> run(int version) const {
    Operand out = c_in_;
    out.device = from_vector(c_in_.host, {static_cast<std::int64_t>(c_in_.host.size())}, kernel_options(c_.dt));
    kernels::launch_gemm(c_.dt, args(&out), version);
    return out.device.to_vector<double>();
  }

  // Every element of C within the rounding bound of the reference, and every
  // element outside C (padding, gaps) unchanged.
  ::testing::AssertionResult check(const std::vector<double>& got, const std::vector<double>& want,
                                   double bound_scale) const {
    std::vector<bool> inside(got.size(), false);
    for (std::int64_t b = 0; b < c_.batch; ++b)
      for (std::int64_t m = 0; m < c_.M; ++m)
        for (std::int64_t n = 0; n < c_.N; ++n) {
          const auto i = static_cast<std::size_t>(c_in_.index(b, m, n));
          inside[i] = true;
          const double tol = bound_scale * static_cast<double>(c_.K + 2) * epsilon(c_.dt) * bound_[i] + 1e-300;
          if (!(std::abs(got[i] - want[i]) <= tol))
            return ::testing::AssertionFailure() << c_.str() << ": C[" << b << "][" << m << "][" << n << "] = "
                                                 << got[i] << ", want " << want[i] << " (tolerance " << tol << ")";
        }
    for (std::size_t i = 0; i < got.size(); ++i) {
      const bool same = got[i] == c_in_.host[i] || (std::isnan(got[i]) && std::isnan(c_in_.host[i]));
      if (!inside[i] && !same)
        return ::testing::AssertionFailure() << c_.str() << ": element " << i << " outside C changed from "
                                             << c_in_.host[i] << " to " << got[i];
    }
    return ::testing::AssertionSuccess();
  }

  const std::vector<double>& want() const { return want_; }

 private:
  double op_a(std::int64_t b, std::int64_t m, std::int64_t k) const {
    const std::int64_t bb = c_.broadcast_a ? 0 : b;
    return a_.host[static_cast<std::size_t>(c_.trans_a ? a_.index(bb, k, m) : a_.index(bb, m, k))];
  }
  double op_b(std::int64_t b, std::int64_t k, std::int64_t n) const {
    const std::int64_t bb = c_.broadcast_b ? 0 : b;
    return b_.host[static_cast<std::size_t>(c_.trans_b ? b_.index(bb, n, k) : b_.index(bb, k, n))];
  }
  void reference() {
    want_ = c_in_.host;
    bound_.assign(want_.size(), 0);
    for (std::int64_t b = 0; b < c_.batch; ++b)
      for (std::int64_t m = 0; m < c_.M; ++m)
        for (std::int64_t n = 0; n < c_.N; ++n) {
          double dot = 0, abs_dot = 0;
          for (std::int64_t k = 0; k < c_.K; ++k) {
            const double p = op_a(b, m, k) * op_b(b, k, n);
            dot += p;
            abs_dot += std::abs(p);
          }
          const auto i = static_cast<std::size_t>(c_in_.index(b, m, n));
          const double old = c_.beta == 0 ? 0 : c_in_.host[i];
          want_[i] = c_.alpha * dot + c_.beta * old;
          bound_[i] = std::abs(c_.alpha) * abs_dot + std::abs(c_.beta * old);
        }
  }

  Case c_;
  Operand a_, b_, c_in_;
  std::vector<double> want_, bound_;
};

// Runs every version on the case: each against the reference, v2 to v7 also against v1.
void check_all_versions(const Case& c, std::mt19937_64& rng) {
  const Problem p(c, rng);
  const std::vector<double> v1 = p.run(1);
  EXPECT_TRUE(p.check(v1, p.want(), 2)) << "v1";
  for (int v = 2; v <= kOurVersions; ++v) {
    const std::vector<double> got = p.run(v);
    EXPECT_TRUE(p.check(got, p.want(), 2)) << "v" << v;
    EXPECT_TRUE(p.check(got, v1, 4)) << "v" << v << " against v1";
  }
}

const std::pair<double, double> kAlphaBeta[] = {{1, 0}, {-1.5, 0.75}, {0.5, 1}, {2, -2}};

// Every (M, N, K) in kSizes^3 runs, each with some dtype and transpose pair:
// the 8 (dtype, transposes) combinations each take every (M, N) pair, with K
// rotating so that together they cover all six K values for each pair. The
// full product per combination would cost 6x more emulator time.
TEST(GpuGemm, EveryVersionMatchesTheFloat64ReferenceForAllSizesAndTransposes) {
  std::mt19937_64 rng(testing::kSeed + 400);
  int combination = 0, which = 0;
  for (DType dt : {DType::float32, DType::float64})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        for (std::size_t im = 0; im < std::size(kSizes); ++im)
          for (std::size_t in = 0; in < std::size(kSizes); ++in) {
            Case c;
            c.dt = dt, c.trans_a = ta, c.trans_b = tb;
            c.M = kSizes[im], c.N = kSizes[in], c.K = kSizes[(im + in + combination) % std::size(kSizes)];
            std::tie(c.alpha, c.beta) = kAlphaBeta[which++ % 4];
            check_all_versions(c, rng);
            if (::testing::Test::HasFailure()) return;  // one readable failure, not thousands
          }
        ++combination;
      }
}

TEST(GpuGemm, BatchesBroadcastsLeadingDimsAndGaps) {
  std::mt19937_64 rng(testing::kSeed + 401);
  const std::int64_t sizes[] = {1, 7, 33};
  const std::int64_t depths[] = {1, 7, 33, 65};
  int which = 0;
  for (DType dt : {DType::float32, DType::float64})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (std::int64_t M : sizes)
          for (std::int64_t N : sizes) {
            Case c;
            c.dt = dt, c.M = M, c.N = N, c.K = depths[which % 4], c.trans_a = ta, c.trans_b = tb, c.batch = 3;
            c.broadcast_a = which % 3 == 1;
            c.broadcast_b = which % 3 == 2;
            c.round_ld = which % 2 == 0;  // v3's vector path, or its scalar one
            c.pad = which % 2 == 0 ? 4 : 3;
            c.gap = 8;
            std::tie(c.alpha, c.beta) = kAlphaBeta[(which / 2) % 4];
            ++which;
            check_all_versions(c, rng);
            if (::testing::Test::HasFailure()) return;
          }
}

// Version 3 takes 16-byte vector loads only when every pointer, leading dim
// and batch stride allows; both paths must give the same answers.
TEST(GpuGemm, VectorLoadsOnlyWhenAlignedAndBothPathsAgree) {
  std::mt19937_64 rng(testing::kSeed + 402);
  for (DType dt : {DType::float32, DType::float64}) {
    Case aligned;
    aligned.dt = dt, aligned.M = 65, aligned.N = 33, aligned.K = 41, aligned.batch = 2, aligned.round_ld = true,
    aligned.gap = 4, aligned.beta = 0.5;
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        aligned.trans_a = ta, aligned.trans_b = tb;
        Case shifted = aligned;  // every pointer one element past a 16-byte boundary
        shifted.offset = 1;
        Case odd_ld = aligned;  // leading dims not a multiple of the vector width
        odd_ld.pad = 1;
        for (const Case* c : {&aligned, &shifted, &odd_ld}) {
          const Problem p(*c, rng);
          EXPECT_EQ(kernels::gemm_vector_loads(dt, p.args()), c == &aligned) << c->str();
          EXPECT_TRUE(p.check(p.run(3), p.want(), 2)) << c->str();
        }
      }
  }
}

TEST(GpuGemm, ZeroSizesAndEmptyReductions) {
  std::mt19937_64 rng(testing::kSeed + 403);
  for (DType dt : {DType::float32, DType::float64}) {
    for (int v = 1; v <= kOurVersions; ++v) {
      // K == 0: C = beta * C (and alpha * nothing).
      Case c;
      c.dt = dt, c.M = 5, c.N = 6, c.K = 0, c.alpha = 3, c.beta = -0.5;
      const Problem p(c, rng);
      EXPECT_TRUE(p.check(p.run(v), p.want(), 2)) << "v" << v;
      // M, N or batch == 0: nothing happens, even with null pointers.
      GemmArgs g;
      g.M = 0, g.N = 4, g.K = 3;
      EXPECT_NO_THROW(kernels::launch_gemm(dt, g, v));
      g.M = 4, g.batch = 0;
      EXPECT_NO_THROW(kernels::launch_gemm(dt, g, v));
    }
  }
}

#if !defined(__CUDACC__)  // thread orders are sim's to choose
TEST(GpuGemm, SchedulesDoNotChangeTheResult) {
  std::mt19937_64 rng(testing::kSeed + 404);
  Case c;
  c.M = 70, c.N = 45, c.K = 37, c.batch = 2, c.trans_b = true, c.beta = 1;
  const Problem p(c, rng);
  for (const char* schedule : {"reverse", "random:11"}) {
    sim::ScopedSchedule scoped(sim::Schedule::parse(schedule));
    for (int v = 1; v <= kOurVersions; ++v) EXPECT_TRUE(p.check(p.run(v), p.want(), 2)) << schedule << " v" << v;
  }
}
#endif

// Expects launch_gemm(version) to throw an Error whose message contains `text`.
void expect_error(const GemmArgs& g, int version, const std::string& text) {
  try {
    kernels::launch_gemm(DType::float32, g, version);
    ADD_FAILURE() << "no error; expected one mentioning '" << text << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(GpuGemm, BadArgumentsAndVersionsNameTheProblem) {
  Tensor buf = Tensor::empty({4096}, kernel_options(DType::float32));
  GemmArgs g;
  g.M = 8, g.N = 8, g.K = 8, g.a = g.b = g.c = buf.raw_data(), g.lda = g.ldb = g.ldc = 8;
  GemmArgs bad = g;
  bad.ldc = 7;
  expect_error(bad, 3, "rows of C overlap");
  bad = g;
  bad.batch = 2, bad.stride_c = 10;
  expect_error(bad, 2, "overlap");
  bad = g;
  bad.K = -1;
  expect_error(bad, 1, "negative size");
  bad = g;
  bad.lda = -8;
  expect_error(bad, 1, "negative leading dimension");
  bad = g;
  bad.c = nullptr;
  expect_error(bad, 3, "null operand");
  const std::string range = detail::concat("versions 1..", kernels::kGemmCublasVersion);
  expect_error(g, 0, range);
  expect_error(g, kernels::kGemmCublasVersion + 1, range);
  bad = g;
  bad.K = std::int64_t{1} << 31;
  expect_error(bad, kernels::kGemmWarpTiledVersion, "must be below 2^31");
#if !defined(__CUDACC__)
  expect_error(g, kernels::kGemmCublasVersion, "cuBLAS exists only on the cuda backend");
#endif
  try {
    kernels::launch_gemm(DType::int64, g, 1);
    ADD_FAILURE() << "int64 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("int64"), std::string::npos) << e.what();
  }
}

TEST(GpuGemm, TheSelectedVersionIsTheOneThatRuns) {
  kernels::register_gemm_family();
  Tensor buf = Tensor::empty({64}, kernel_options(DType::float32));
  GemmArgs g;
  // A and B may share memory; C must not, or the kernel races with itself.
  g.M = g.N = g.K = 2, g.a = g.b = buf.data<float>(), g.c = buf.data<float>() + 8, g.lda = g.ldb = g.ldc = 2;
#if !defined(__CUDACC__)
  {
    // Only cuBLAS fails on sim, so its error proves the routing.
    testing::ScopedKernelVersion cublas("gemm", kernels::kGemmCublasVersion);
    EXPECT_THROW(kernels::launch_gemm(DType::float32, g), Error);
  }
#endif
  for (int v = 1; v <= kOurVersions; ++v) {
    testing::ScopedKernelVersion chosen("gemm", v);
    EXPECT_EQ(kernel_version("gemm"), v);
    EXPECT_TRUE(kernel_version_pinned("gemm"));
    EXPECT_NO_THROW(kernels::launch_gemm(DType::float32, g));
  }
  EXPECT_EQ(kernel_version("gemm"), kernels::kGemmSplitKVersion) << "v7 is the default";
  EXPECT_FALSE(kernel_version_pinned("gemm")) << "back to the default, nothing pins it";
}

#if !defined(__CUDACC__)  // the performance model is sim's
// FMAs the sim profile counts, summed over the kernels of one launch_gemm.
std::uint64_t counted_fmas(std::int64_t M, std::int64_t N, std::int64_t K, int version) {
  const convkit::sim::ScopedProfile profile;
  Tensor a = Tensor::empty({M * K}, kernel_options(DType::float32)).fill_(1);
  Tensor b = Tensor::empty({K * N}, kernel_options(DType::float32)).fill_(1);
  Tensor c = Tensor::empty({M * N}, kernel_options(DType::float32));
  GemmArgs g;
  g.M = M, g.N = N, g.K = K, g.a = a.data<float>(), g.b = b.data<float>(), g.c = c.data<float>();
  g.lda = K, g.ldb = N, g.ldc = N;
  kernels::launch_gemm(DType::float32, g, version);
  EXPECT_EQ(c.to_vector<float>()[0], static_cast<float>(K));
  std::uint64_t fmas = 0;
  for (const convkit::sim::KernelProfile& p : convkit::sim::take_profile()) fmas += p.fmas;
  return fmas;
}

// v1 does exactly M*N*K; v2 multiplies whole 16x16x16 tiles, zeros included;
// v3 skips threads whose 4x4-element groups start past the edge, but its live
// threads run whole 8-deep k steps over their 8x8 elements.
TEST(GpuGemm, TheSimProfileCountsEachVersionsMultiplyAdds) {
  if (!convkit::sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  kernels::register_gemm_family();
  EXPECT_EQ(counted_fmas(33, 33, 33, 1), 33u * 33 * 33);
  EXPECT_EQ(counted_fmas(33, 33, 33, 2), 48u * 48 * 48);
  // ceil(33 / 4) = 9 live threads along M and along N, 64 FMAs per k, 5 k steps of 8.
  EXPECT_EQ(counted_fmas(33, 33, 33, 3), 9u * 9 * 64 * 5 * 8);
  for (int v = 1; v <= kOurVersions; ++v) EXPECT_EQ(counted_fmas(128, 128, 128, v), 128u * 128 * 128) << "v" << v;
}
#endif

// The warp-tiled versions on shapes that are no multiple of any tile: 1,
// primes, K = 1, K long enough for v7 to split, every transpose pair, both
// dtypes, batches with a broadcast operand.
TEST(GpuGemm, WarpTiledVersionsOnOddShapes) {
  std::mt19937_64 rng(testing::kSeed + 405);
  struct Shape {
    std::int64_t M, N, K, batch;
  };
  const Shape shapes[] = {{1, 1, 1, 1},     {1, 300, 7, 1},   {131, 67, 1, 1},   {37, 129, 263, 2},
                          {257, 3, 97, 1}, {67, 131, 513, 1}, {2, 2, 1031, 3},  {5, 70, 600, 2}};
  int which = 0;
  for (const Shape& sh : shapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Case c;
        c.dt = which % 5 == 4 ? DType::float64 : DType::float32;
        c.M = sh.M, c.N = sh.N, c.K = sh.K, c.batch = sh.batch, c.trans_a = ta, c.trans_b = tb;
        c.broadcast_b = sh.batch > 1 && which % 2 == 0;
        c.round_ld = which % 3 != 0;  // aligned (16-byte copies) or not (element copies)
        std::tie(c.alpha, c.beta) = kAlphaBeta[which++ % 4];
        check_all_versions(c, rng);
        if (::testing::Test::HasFailure()) return;
      }
}

// The dense layers of cifar10-cnn (Linear(2304, 512), Linear(512, 10)) and
// resnet18 (Linear(512, 10)), each pass at batch 16: forward y = x W^T,
// backward-data dx = dy W, backward-weights dW = dy^T x.
TEST(GpuGemm, WarpTiledVersionsOnTheDenseLayersOfCifar10CnnAndResnet18) {
  std::mt19937_64 rng(testing::kSeed + 406);
  constexpr std::int64_t kBatch = 16;
  const std::pair<std::int64_t, std::int64_t> layers[] = {{2304, 512}, {512, 10}};
  for (const auto& [in, out] : layers) {
    Case forward, data, weights;
    forward.M = kBatch, forward.N = out, forward.K = in, forward.trans_b = true;
    data.M = kBatch, data.N = in, data.K = out;
    weights.M = out, weights.N = in, weights.K = kBatch, weights.trans_a = true, weights.beta = 1;
    for (const Case* c : {&forward, &data, &weights}) {
      const Problem p(*c, rng);
      for (int v : kWarpTiled) EXPECT_TRUE(p.check(p.run(v), p.want(), 2)) << "v" << v << " " << c->str();
    }
  }
}

// What the shape rules choose, as gemm_describe says it.
TEST(GpuGemm, TheShapeRulesPickTheTileAndTheSplit) {
  const auto describe = [](std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t batch, int v,
                           DType dt = DType::float32) {
    GemmArgs g;
    g.M = M, g.N = N, g.K = K, g.batch = batch;
    return kernels::gemm_describe(dt, g, v);
  };
  const auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos ? ::testing::AssertionSuccess()
                                                : ::testing::AssertionFailure() << "'" << text << "' lacks '" << part << "'";
  };
  EXPECT_TRUE(has(describe(64, 64, 64, 1, 4), "128x128x8 block tile, warps 2x4 of 64x32, threads 8x8"));
  EXPECT_TRUE(has(describe(64, 64, 64, 1, 4), "synchronous loads"));
  EXPECT_TRUE(has(describe(64, 64, 64, 1, 5), "cp.async pipeline of 3 stages"));
  EXPECT_TRUE(has(describe(64, 64, 64, 1, 5, DType::float64), "cp.async pipeline of 2 stages"));
  // v6: the largest tile with at least 132 blocks, else the smallest.
  EXPECT_TRUE(has(describe(2048, 2048, 64, 1, 6), "128x128x8"));   // 256 blocks
  EXPECT_TRUE(has(describe(2048, 1024, 64, 1, 6), "128x64x8"));    // 128x128: 128, 128x64: 256
  EXPECT_TRUE(has(describe(1024, 1024, 64, 1, 6), "64x64x8"));     // 64, 128, then 256
  EXPECT_TRUE(has(describe(128, 128, 64, 64, 6), "64x64x8"));      // the batch counts
  EXPECT_TRUE(has(describe(1024, 512, 64, 1, 6), "64x32x8"));      // 32, 64, 128, then 256
  EXPECT_TRUE(has(describe(16, 16, 64, 1, 6), "64x32x8"));         // none fills the GPU
  // v7: cifar10-cnn's Linear(2304, 512) at batch 128 has 32 blocks of 64x32:
  // K = 2304 is cut into min(ceil(132 / 32), 2304 / 256) = 5 slices of 464.
  EXPECT_TRUE(has(describe(128, 512, 2304, 1, 7), "64x32x8"));
  EXPECT_TRUE(has(describe(128, 512, 2304, 1, 7), "split-K 5 x 464"));
  EXPECT_FALSE(has(describe(128, 512, 2304, 1, 6), "split-K"));
  EXPECT_FALSE(has(describe(128, 512, 511, 1, 7), "split-K"));     // K too short to split
  EXPECT_FALSE(has(describe(2048, 2048, 4096, 1, 7), "split-K"));  // the tiles fill the GPU
  // v8: v7's choices, its 128x128 tile in 8x16 thread tiles for float.
  EXPECT_TRUE(has(describe(2048, 2048, 64, 1, 8), "128x128x8 block tile, warps 2x2 of 64x64, threads 8x16"));
  EXPECT_TRUE(has(describe(2048, 2048, 64, 1, 8, DType::float64), "warps 2x4 of 64x32, threads 8x8"));
  EXPECT_TRUE(has(describe(2048, 1024, 64, 1, 8), "128x64x8"));
  EXPECT_TRUE(has(describe(128, 512, 2304, 1, 8), "split-K 5 x 464"));
}

// v8 differs from v7 only in how its 128x128 tile's lanes share the
// outputs: each output is summed over k in the same order, so where both
// take that tile (132 blocks: 2 x 1 tiles of 129 x 127 over a batch of 66)
// they agree bit for bit, in every transpose pair, ragged in M, N and K.
TEST(GpuGemm, WideThreadTilesGiveTheBitsOfTheNarrowOnes) {
  std::mt19937_64 rng(testing::kSeed + 411);
  int which = 0;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Case c;
      c.M = 129, c.N = 127, c.K = 37, c.batch = 66, c.trans_a = ta, c.trans_b = tb;
      c.round_ld = which % 2 == 0;  // 16-byte copies, or element copies
      std::tie(c.alpha, c.beta) = kAlphaBeta[which++ % 4];
      const Problem p(c, rng);
      GemmArgs g = p.args();
      ASSERT_NE(kernels::gemm_describe(DType::float32, g, kernels::kGemmWideThreadTileVersion).find("threads 8x16"),
                std::string::npos);
      const std::vector<double> wide = p.run(kernels::kGemmWideThreadTileVersion);
      EXPECT_TRUE(p.check(wide, p.want(), 2)) << c.str();
      // Bit for bit; outside C (NaN where beta == 0) unchanged by both.
      const std::vector<double> narrow = p.run(kernels::kGemmSplitKVersion);
      ASSERT_EQ(wide.size(), narrow.size());
      for (std::size_t i = 0; i < wide.size(); ++i)
        if (!(wide[i] == narrow[i] || (std::isnan(wide[i]) && std::isnan(narrow[i])))) {
          ADD_FAILURE() << c.str() << ": element " << i << " is " << wide[i] << " in v8, " << narrow[i] << " in v7";
          break;
        }
    }
}

#if !defined(__CUDACC__)  // thread orders are sim's to choose
TEST(GpuGemm, WarpTiledSchedulesDoNotChangeTheResult) {
  std::mt19937_64 rng(testing::kSeed + 407);
  Case c;
  c.M = 70, c.N = 45, c.K = 300, c.batch = 2, c.trans_a = true, c.beta = 1;
  const Problem p(c, rng);
  for (const char* schedule : {"reverse", "random:11"}) {
    sim::ScopedSchedule scoped(sim::Schedule::parse(schedule));
    for (int v : kWarpTiled) EXPECT_TRUE(p.check(p.run(v), p.want(), 2)) << schedule << " v" << v;
  }
}
#endif

// Split-K adds its slices in a fixed order with no atomics: the same bits on
// every run and, on sim, under every thread order.
TEST(GpuGemm, SplitKIsBitIdenticalAcrossRunsAndSchedules) {
  std::mt19937_64 rng(testing::kSeed + 408);
  Case c;
  c.M = 64, c.N = 64, c.K = 2048, c.trans_b = true, c.alpha = 0.5, c.beta = 1;
  const Problem p(c, rng);
  EXPECT_NE(kernels::gemm_describe(c.dt, p.args(), kernels::kGemmSplitKVersion).find("split-K 8 x 256"),
            std::string::npos);
  const std::vector<double> first = p.run(kernels::kGemmSplitKVersion);
  EXPECT_TRUE(p.check(first, p.want(), 2));
  EXPECT_EQ(p.run(kernels::kGemmSplitKVersion), first) << "second run";
#if !defined(__CUDACC__)
  for (const char* schedule : {"reverse", "random:3", "random:20261126"}) {
    sim::ScopedSchedule scoped(sim::Schedule::parse(schedule));
    EXPECT_EQ(p.run(kernels::kGemmSplitKVersion), first) << schedule;
  }
#endif
}

// cifar10-cnn's Linear(2304, 512) forward at batch 128, the shape split-K is for.
TEST(GpuGemm, SplitKOnCifar10CnnsDenseLayerAtBatch128) {
  std::mt19937_64 rng(testing::kSeed + 409);
  Case c;
  c.M = 128, c.N = 512, c.K = 2304, c.trans_b = true;
  const Problem p(c, rng);
  EXPECT_NE(kernels::gemm_describe(c.dt, p.args(), kernels::kGemmSplitKVersion).find("split-K 5"),
            std::string::npos);
  EXPECT_TRUE(p.check(p.run(kernels::kGemmSplitKVersion), p.want(), 2));
}

#if !defined(__CUDACC__)
// The main loops of v4, v5 and v8 (and the epilogue) on an aligned 128^3
// product (v8: a batch of 132 of them, 16 deep), every transpose pair: no
// shared-memory bank conflicts, and global requests that touch no more
// sectors than their bytes need (the sim model's minimum).
TEST(GpuGemm, WarpTiledLoopsAreConflictFreeAndCoalescedInTheSimProfile) {
  if (!convkit::sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  std::mt19937_64 rng(testing::kSeed + 410);
  for (int v : {kernels::kGemmWarpTiledVersion, kernels::kGemmPipelinedVersion, kernels::kGemmWideThreadTileVersion})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Case c;
        c.M = c.N = c.K = 128, c.trans_a = ta, c.trans_b = tb;
        // v8 takes its 128x128 tile where 132 blocks fill the GPU: a batch
        // of 132, K shortened to keep the emulation quick.
        if (v == kernels::kGemmWideThreadTileVersion) c.batch = 132, c.K = 16;
        convkit::sim::ScopedProfile profile;
        const Problem p(c, rng);
        profile.take();  // the operands' fills
        EXPECT_TRUE(p.check(p.run(v), p.want(), 2));
        convkit::sim::KernelProfile k;
        std::string kernel;
        for (const convkit::sim::KernelProfile& one : profile.take())
          if (one.kernel.find("gemm_warp_tiled") != std::string::npos) k += one, kernel = one.kernel;
        const std::string what = detail::concat("v", v, " ", c.str());
        if (v == kernels::kGemmWideThreadTileVersion) {
          EXPECT_NE(kernel.find("ThreadShape<8, 16>"), std::string::npos) << what << ": ran " << kernel;
          EXPECT_EQ(k.threads, 132u * 128) << what;
        }
        EXPECT_GT(k.shared_load.requests, 0u) << what;
        EXPECT_EQ(k.shared_load.conflict_wavefronts, 0u) << what;
        EXPECT_EQ(k.shared_store.conflict_wavefronts, 0u) << what;
        for (const convkit::sim::RequestCounts* r : {&k.global_load, &k.global_store}) {
          EXPECT_GT(r->requests, 0u) << what;
          EXPECT_EQ(r->sectors * 32, r->bytes) << what << ": more sectors than the bytes need";
        }
      }
}
#endif

}  // namespace
}  // namespace convkit
