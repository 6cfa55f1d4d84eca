// Raw tests of the tensor-core GEMM kernels (kernels/gemm_tensor_core.cu) on
// sim (and, in the nvcc build, on cuda): every version, both precisions, every
// transpose pair, ragged sizes, batches with a broadcast operand and padded
// leading dims, alpha/beta, against a float64 reference within the error bound
// of tf32/bf16 operands; v2, v3 and v4 against v1 (v3 and v4 on their 16-byte
// paths and at their edges), v6 (wgmma) against v1 where it runs; the rounding shows; bad input is refused with a
// reason; the sim profile sees conflict-free fragment reads.
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>

#include "convkit/backend/precision.h"
#include "convkit/convkit.h"
#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "convkit/sim/schedule.h"
#include "convkit/sim/wgmma.h"
#include "gpu/gpu_testing.h"
#include "gpu/tensor_core_tolerance.h"
#include "kernels/gemm_tensor_core.cuh"

namespace convkit {
namespace {

namespace kernels = convkit::CK_GPU_NS;
using kernels::GemmArgs;
using kernels::TensorCorePrecision;
using testing::kernel_device;
using testing::kernel_options;

// Unit roundoff of the operands, and what one operand rounds to.
double unit(TensorCorePrecision p) {
  return p == TensorCorePrecision::tf32 ? testing::kTf32Unit : testing::kBf16Unit;
}

struct Case {
  TensorCorePrecision precision = TensorCorePrecision::tf32;
  std::int64_t M = 1, N = 1, K = 1, batch = 1;
  bool trans_a = false, trans_b = false, broadcast_b = false;
  std::int64_t pad = 0;
  double alpha = 1, beta = 0;
  std::string str() const {
    return detail::concat(kernels::precision_name(precision), " M=", M, " N=", N, " K=", K, " batch=", batch,
                          trans_a ? " At" : "", trans_b ? " Bt" : "", broadcast_b ? " B-broadcast" : "", " pad=", pad,
                          " alpha=", alpha, " beta=", beta);
  }
};

struct Result {
  std::vector<float> c;       // the kernel's C, whole buffer
  std::vector<double> want;   // float64 reference on the unrounded operands
  std::vector<double> bound;  // per element
};

Result run(const Case& c, int version, std::uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  const std::int64_t a_rows = c.trans_a ? c.K : c.M, a_cols = c.trans_a ? c.M : c.K;
  const std::int64_t b_rows = c.trans_b ? c.N : c.K, b_cols = c.trans_b ? c.K : c.N;
  const std::int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.N + c.pad;
  const std::int64_t sa = a_rows * lda, sb = c.broadcast_b ? 0 : b_rows * ldb, sc = c.M * ldc;
  std::vector<float> A(static_cast<std::size_t>(sa * c.batch)), B(static_cast<std::size_t>(std::max<std::int64_t>(sb, b_rows * ldb) * c.batch)),
      C(static_cast<std::size_t>(sc * c.batch));
  for (float& x : A) x = u(rng);
  for (float& x : B) x = u(rng);
  for (float& x : C) x = u(rng);
  const Tensor a = from_vector(A, {static_cast<std::int64_t>(A.size())}, kernel_options(DType::float32));
  const Tensor b = from_vector(B, {static_cast<std::int64_t>(B.size())}, kernel_options(DType::float32));
  const Tensor out = from_vector(C, {static_cast<std::int64_t>(C.size())}, kernel_options(DType::float32));
  GemmArgs g;
  g.M = c.M, g.N = c.N, g.K = c.K, g.batch = c.batch, g.trans_a = c.trans_a, g.trans_b = c.trans_b;
  g.a = a.raw_data(), g.lda = lda, g.stride_a = sa;
  g.b = b.raw_data(), g.ldb = ldb, g.stride_b = sb;
  g.c = out.raw_data(), g.ldc = ldc, g.stride_c = sc;
  g.alpha = c.alpha, g.beta = c.beta;
  kernels::launch_gemm_tensor_core(c.precision, DType::float32, g, version);
  Result r;
  r.c = out.to_vector<float>();
  r.want.assign(C.begin(), C.end());
  r.bound.assign(C.size(), 0.0);
  const double u_op = unit(c.precision);
  for (std::int64_t bb = 0; bb < c.batch; ++bb)
    for (std::int64_t m = 0; m < c.M; ++m)
      for (std::int64_t n = 0; n < c.N; ++n) {
        double acc = 0, mag = 0;
        for (std::int64_t k = 0; k < c.K; ++k) {
          const double x = A[static_cast<std::size_t>(bb * sa + (c.trans_a ? k * lda + m : m * lda + k))];
          const double y = B[static_cast<std::size_t>(bb * sb + (c.trans_b ? n * ldb + k : k * ldb + n))];
          acc += x * y;
          mag += std::fabs(x * y);
        }
        const std::size_t i = static_cast<std::size_t>(bb * sc + m * ldc + n);
        const double old = C[i];
        r.want[i] = c.alpha * acc + c.beta * old;
        // Operand rounding and fp32 accumulation (tensor_core_tolerance.h),
        // and the epilogue's few fp32 roundings of the beta term.
        r.bound[i] = std::fabs(c.alpha) * testing::rounded_operand_bound(mag, c.K, u_op) +
                     std::fabs(c.beta * old) * 0x1p-22 + 1e-30;
      }
  return r;
}

void expect_close(const Case& c, const Result& r) {
  for (std::size_t i = 0; i < r.c.size(); ++i)
    ASSERT_LE(std::fabs(r.c[i] - r.want[i]), r.bound[i]) << c.str() << " element " << i << ": got " << r.c[i]
                                                         << ", want " << r.want[i];
}

std::vector<Case> small_cases() {
  std::vector<Case> cases;
  const std::int64_t shapes[][3] = {{1, 1, 1}, {7, 9, 5}, {16, 8, 8}, {33, 17, 40}, {65, 64, 16}, {70, 130, 33}};
  for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16})
    for (const auto& s : shapes)
      for (int t = 0; t < 4; ++t) {
        Case c;
        c.precision = p, c.M = s[0], c.N = s[1], c.K = s[2], c.trans_a = t & 1, c.trans_b = t & 2;
        cases.push_back(c);
      }
  Case batched;
  batched.M = 20, batched.N = 24, batched.K = 19, batched.batch = 3, batched.broadcast_b = true, batched.pad = 3;
  batched.alpha = -0.5, batched.beta = 2;
  cases.push_back(batched);
  batched.precision = TensorCorePrecision::bf16, batched.trans_a = true;
  cases.push_back(batched);
  Case k0;  // K = 0: C = beta * C
  k0.M = 5, k0.N = 6, k0.K = 0, k0.beta = 0.5;
  cases.push_back(k0);
  return cases;
}

TEST(GpuGemmTensorCore, SmallCasesWithinTheRoundingBoundEveryVersion) {
  for (const Case& c : small_cases()) {
    const Result v1 = run(c, 1);
    expect_close(c, v1);
    for (int version = 2; version <= 5; ++version) {
      const Result r = run(c, version);
      expect_close(c, r);
#if !defined(__CUDACC__)
      // Same rounding, same mma per k-step in the same order: under sim the
      // versions agree bit for bit.
      ASSERT_EQ(v1.c, r.c) << c.str() << " v" << version;
#endif
    }
  }
}

// v3's 16-byte staging runs on whole 128x128 tiles of 16-word stages with
// aligned operands, v4's 16-byte copies on aligned operands, with zero-filled
// chunks at ragged edges: every transpose pair, a batch with a broadcast B, a
// ragged product whose inner tiles take v3's wide path and whose edges do
// not, and (sizes 1 mod 4, rows padded to 4) 16-byte chunks cut by the edge,
// in one partial v4 stage and in a pipeline of 9 stages.
TEST(GpuGemmTensorCore, WideStagingAndAsyncCopiesAgreeWithV1) {
  const std::int64_t shapes[][5] = {{256, 128, 64, 1, 0}, {128, 256, 96, 2, 0}, {200, 136, 72, 1, 0},
                                    {129, 133, 13, 1, 3}, {65, 137, 261, 1, 3}};
  for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16})
    for (const auto& s : shapes)
      for (int t = 0; t < 4; ++t) {
        Case c;
        c.precision = p, c.M = s[0], c.N = s[1], c.K = s[2], c.batch = s[3], c.broadcast_b = s[3] > 1, c.pad = s[4];
        c.trans_a = t & 1, c.trans_b = t & 2, c.beta = 0.5;
        const Result v1 = run(c, 1, 11);
        for (int version : {3, 4, 5}) {
          const Result r = run(c, version, 11);
          expect_close(c, r);
#if !defined(__CUDACC__)
          ASSERT_EQ(v1.c, r.c) << c.str() << " v" << version;
#endif
        }
      }
}

TEST(GpuGemmTensorCore, LargerProductSmallRelativeError) {
  // 128 x 96 x 256: the error is of the order u * sqrt(K), far below the bound.
  for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16}) {
    Case c;
    c.precision = p, c.M = 128, c.N = 96, c.K = 256;
    for (int version : {2, 3, 4, 5}) {
      const Result r = run(c, version, 7);
      expect_close(c, r);
      double worst = 0, norm = 0;
      for (std::size_t i = 0; i < r.c.size(); ++i) {
        worst = std::max(worst, std::fabs(r.c[i] - r.want[i]));
        norm = std::max(norm, std::fabs(r.want[i]));
      }
      EXPECT_LT(worst / norm, 4 * unit(p)) << kernels::precision_name(p) << " v" << version;
    }
  }
}

// 1 + 2^-20 is not a tf32 (nor bf16) number: the product shows that the
// operands were rounded, i.e. that the tensor-core path ran.
TEST(GpuGemmTensorCore, OperandsAreRounded) {
  for (int version : {1, 2, 3, 4, 5})
    for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16}) {
      const Tensor a = from_vector(std::vector<float>{1.0f + 0x1p-20f}, {1}, kernel_options(DType::float32));
      const Tensor b = from_vector(std::vector<float>{3.0f}, {1}, kernel_options(DType::float32));
      const Tensor c = from_vector(std::vector<float>{0.0f}, {1}, kernel_options(DType::float32));
      GemmArgs g;
      g.M = g.N = g.K = 1;
      g.a = a.raw_data(), g.lda = 1, g.b = b.raw_data(), g.ldb = 1, g.c = c.raw_data(), g.ldc = 1;
      kernels::launch_gemm_tensor_core(p, DType::float32, g, version);
      EXPECT_EQ(c.to_vector<float>()[0], 3.0f) << kernels::precision_name(p) << " v" << version;
    }
}

// A two-layer perceptron (every product a matmul) trains on the kernel
// device at float32_precision medium: it learns, stays near the strict run,
// and is not it (the bf16 tensor-core path ran). Weights, activations and
// gradients stay float32 throughout: only the products' operands are bf16.
std::vector<double> train_perceptron(Float32Precision precision) {
  const ScopedFloat32Precision setting(precision);
  manual_seed(322);
  auto net = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(20, 48), std::make_shared<nn::ReLU>(),
                                              std::make_shared<nn::Linear>(48, 4));
  net->to(kernel_device());
  manual_seed(9);
  const Tensor x = randn({16, 20}).to(kernel_device());
  std::vector<std::int64_t> labels(16);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 4);
  const Tensor y = from_vector(labels, {16}, TensorOptions().dtype(DType::int64).device(kernel_device()));
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  std::vector<double> losses;
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    Tensor loss = cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item());
  }
  EXPECT_EQ(net->parameters()[0].dtype(), DType::float32) << "the master weights stay float32";
  return losses;
}

TEST(GpuGemmTensorCore, APerceptronTrainsAtMediumPrecision) {
  const std::vector<double> strict = train_perceptron(Float32Precision::highest);
  const std::vector<double> medium = train_perceptron(Float32Precision::medium);
  EXPECT_LT(medium.back(), 0.5 * medium.front()) << "the network should learn the batch";
  bool differs = false;
  for (std::size_t i = 0; i < strict.size(); ++i) {
    EXPECT_NEAR(medium[i], strict[i], 5e-2 * std::abs(strict[i]) + 1e-3) << "step " << i;
    differs = differs || medium[i] != strict[i];
  }
  EXPECT_TRUE(differs) << "medium changed nothing: the bf16 path did not run";
}

TEST(GpuGemmTensorCore, RefusesBadInputWithAReason) {
  GemmArgs g;
  g.M = g.N = g.K = 4;
  g.lda = g.ldb = g.ldc = 4;
  const auto why = [&](DType dtype, int version) {
    return kernels::gemm_tensor_core_cannot_implement(TensorCorePrecision::tf32, dtype, g, version);
  };
  EXPECT_NE(why(DType::float64, 2).find("float32"), std::string::npos);
  EXPECT_NE(why(DType::float32, 8).find("versions 1..7"), std::string::npos);
  EXPECT_NE(why(DType::float32, 2).find("null"), std::string::npos);
  try {
    kernels::launch_gemm_tensor_core(TensorCorePrecision::tf32, DType::float64, g, 2);
    ADD_FAILURE() << "float64 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor-core GEMM takes float32"), std::string::npos) << e.what();
  }
}

// Under sim the wgmma versions give v1's bits: each accumulator sums its
// k-slices in v1's order, in the same arithmetic. On a GPU, wgmma's
// accumulation order and rounding are its own (the PTX ISA leaves them
// unspecified) and v1 runs mma.sync: there the error bound is the test.
void expect_v1_bits_on_sim(const Result& v1, const Result& r, const std::string& what) {
#if defined(__CUDACC__)
  (void)v1, (void)r, (void)what;
#else
  ASSERT_EQ(v1.c, r.c) << what;
#endif
}

// v6 (wgmma) where it runs: tf32, op(A) and op(B) k-contiguous. Within the
// error bound, and under sim with v1's bits; the shapes cut its 128x128 tiles and
// 32-element stages, and take each copy path: whole chunks (K a multiple of
// 4, aligned), sized chunks (K ragged, leading dims multiples of 4) and
// 4-byte copies (leading dims not multiples of 4).
TEST(GpuGemmTensorCore, V6WgmmaAgreesWithV1WhereBothOperandsAreKContiguous) {
  if (!device_runs_wgmma()) GTEST_SKIP() << why_no_wgmma();
  const std::int64_t shapes[][3] = {{1, 1, 1}, {7, 9, 5}, {33, 17, 40}, {70, 130, 33},
                                    {128, 128, 64}, {130, 257, 100}, {200, 129, 96}};
  for (const auto& s : shapes)
    for (std::int64_t pad : {0, 1, 2}) {
      Case c;
      c.M = s[0], c.N = s[1], c.K = s[2], c.trans_b = true;
      // pad 1: leading dims K + 1; pad 2: K rounded up to a multiple of 4 where K is ragged.
      c.pad = pad == 0 ? 0 : pad == 1 ? 1 : (4 - c.K % 4) % 4;
      const Result v1 = run(c, 1, 5);
      const Result r = run(c, 6, 5);
      expect_close(c, r);
      expect_v1_bits_on_sim(v1, r, c.str() + " v6");
    }
  Case batched;  // a broadcast B, padded leading dims, alpha and beta
  batched.M = 40, batched.N = 136, batched.K = 44, batched.batch = 3, batched.broadcast_b = true, batched.pad = 4;
  batched.trans_b = true, batched.alpha = -0.5, batched.beta = 2;
  const Result v1 = run(batched, 1, 9), r = run(batched, 6, 9);
  expect_close(batched, r);
  expect_v1_bits_on_sim(v1, r, batched.str() + " v6");
  Case k0;  // K = 0: C = beta * C
  k0.M = 5, k0.N = 6, k0.K = 0, k0.beta = 0.5, k0.trans_b = true;
  expect_close(k0, run(k0, 6));
}

// v7 (wgmma from register-staged stages) in every layout and both
// precisions: within the error bound and, under sim, v1's bits, on ragged sizes that cut its tiles and stages, with
// 16-byte loads (leading dims multiples of 4) and without (pad 1), and on a
// batch with a broadcast B, alpha and beta.
TEST(GpuGemmTensorCore, V7WgmmaStagedAgreesWithV1InEveryLayout) {
  if (!device_runs_wgmma()) GTEST_SKIP() << why_no_wgmma();
  const std::int64_t shapes[][3] = {{1, 1, 1}, {7, 9, 5}, {33, 17, 40}, {128, 128, 64}, {130, 257, 100}};
  for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16})
    for (int t = 0; t < 4; ++t)
      for (const auto& s : shapes)
        for (std::int64_t pad : {0, 1}) {
          Case c;
          c.precision = p, c.M = s[0], c.N = s[1], c.K = s[2], c.trans_a = t & 1, c.trans_b = t & 2;
          c.pad = pad == 0 ? (4 - (c.trans_a ? c.M : c.K) % 4) % 4 : 1;
          const Result v1 = run(c, 1, 3);
          const Result r = run(c, 7, 3);
          expect_close(c, r);
          expect_v1_bits_on_sim(v1, r, c.str() + " v7");
        }
  for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16}) {
    Case batched;
    batched.precision = p, batched.M = 40, batched.N = 136, batched.K = 70, batched.batch = 3;
    batched.broadcast_b = true, batched.pad = 2, batched.trans_a = true, batched.alpha = -0.5, batched.beta = 2;
    const Result v1 = run(batched, 1, 9), r = run(batched, 7, 9);
    expect_close(batched, r);
    expect_v1_bits_on_sim(v1, r, batched.str() + " v7");
  }
}

// C = A B^T, 4 x 4 x 4, every operand x (16 floats): the layout the wgmma
// versions take, for the tests of their refusals.
GemmArgs wgmma_shaped_4x4(float* x) {
  GemmArgs g;
  g.M = g.N = g.K = 4;
  g.lda = g.ldb = g.ldc = 4;
  g.a = g.b = g.c = x;
  g.trans_b = true;
  return g;
}

#if defined(__CUDACC__)
// Under CUDA_FORCE_PTX_JIT=1 the driver ignores the build's sm_90a code and
// compiles its PTX, compute_80 in the builds cmake/ConvkitCuda.cmake and
// gpu-check make, where the wgmma kernels trap: the probe behind
// device_runs_wgmma must say no there, whatever the GPU. gpu-check's ptx_jit
// step runs this suite so and requires this test to pass, not skip. (A build
// for 90a alone carries compute_90a PTX, which holds wgmma and where the
// probe rightly says yes: this test is not for such a build.)
TEST(GpuGemmTensorCore, NoWgmmaWhereTheDriverCompilesPtx) {
  const char* jit = std::getenv("CUDA_FORCE_PTX_JIT");
  if (jit == nullptr || std::string(jit) != "1") GTEST_SKIP() << "CUDA_FORCE_PTX_JIT=1 is not set";
  EXPECT_FALSE(device_runs_wgmma());
  float x[16] = {};
  GemmArgs g = wgmma_shaped_4x4(x);
  for (int version : {6, 7})
    EXPECT_NE(kernels::gemm_tensor_core_cannot_implement(TensorCorePrecision::tf32, DType::float32, g, version)
                  .find("CUDA_FORCE_PTX_JIT"),
              std::string::npos)
        << version;
}
#endif

// CONVKIT_DISABLE_WGMMA=1 turns the wgmma versions off on every device, sim
// included: they refuse, naming the variable, and the default still runs.
// tests/gpu/gemm_tensor_core/CMakeLists.txt runs this with the variable set,
// and with a bad value, which must be an error that names it.
TEST(GpuGemmTensorCoreEnvironment, DisableWgmmaTurnsTheWgmmaVersionsOff) {
  const char* disable = std::getenv("CONVKIT_DISABLE_WGMMA");
  if (disable == nullptr) GTEST_SKIP() << "CONVKIT_DISABLE_WGMMA is unset";
  EXPECT_FALSE(device_runs_wgmma());
  float x[16] = {};
  const GemmArgs g = wgmma_shaped_4x4(x);
  for (int version : {6, 7})
    EXPECT_NE(kernels::gemm_tensor_core_cannot_implement(TensorCorePrecision::tf32, DType::float32, g, version)
                  .find("CONVKIT_DISABLE_WGMMA"),
              std::string::npos)
        << version;
  EXPECT_EQ(kernels::gemm_tensor_core_cannot_implement(TensorCorePrecision::tf32, DType::float32, g, 4), "");
}

TEST(GpuGemmTensorCore, V6RefusesWhatWgmmaCannotRunWithAReason) {
  float x[16] = {};
  GemmArgs g = wgmma_shaped_4x4(x);
  const auto why = [&](TensorCorePrecision p) { return kernels::gemm_tensor_core_cannot_implement(p, DType::float32, g, 6); };
  EXPECT_NE(why(TensorCorePrecision::bf16).find("tf32 only"), std::string::npos);
  for (int t : {0, 1, 3}) {  // every transpose pair but (A, B transposed)
    g.trans_a = t & 1, g.trans_b = t & 2;
    EXPECT_NE(why(TensorCorePrecision::tf32).find("k-contiguous"), std::string::npos) << t;
  }
  g.trans_a = false, g.trans_b = true;
  if (device_runs_wgmma()) {
    EXPECT_EQ(why(TensorCorePrecision::tf32), "");
  } else {
    EXPECT_NE(why(TensorCorePrecision::tf32).find(why_no_wgmma()), std::string::npos);
  }
}

#if !defined(__CUDACC__)  // sim's thread orders and performance model
// The wgmma versions' barriers under other thread orders: reverse, and
// random per block and barrier. A stage published too early, or refilled
// while a warpgroup's products still read it, gives other bits than v1 in
// some order (sim performs the products at the wait, docs/sim.md).
TEST(GpuGemmTensorCore, V6AndV7GiveV1sBitsInEveryThreadOrder) {
  if (!device_runs_wgmma()) GTEST_SKIP() << why_no_wgmma();
  for (const char* order : {"reverse", "random:7", "random:20261129"}) {
    const convkit::sim::ScopedSchedule schedule(convkit::sim::Schedule::parse(order));
    for (int version : {6, 7})
      for (int t : {2, 0, 1}) {
        if (version == 6 && t != 2) continue;  // v6: B transposed only
        for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16}) {
          if (version == 6 && p == TensorCorePrecision::bf16) continue;
          Case c;
          c.precision = p, c.M = 130, c.N = 140, c.K = 100, c.trans_a = t & 1, c.trans_b = t & 2;
          const Result v1 = run(c, 1, 4), r = run(c, version, 4);
          ASSERT_EQ(v1.c, r.c) << c.str() << " v" << version << " schedule " << order;
        }
      }
  }
}

// A GPU's dynamic shared memory starts wherever the static shared memory
// and the driver's reservation end; sim's starts at shared address 0 unless
// told otherwise. At 528 (16-aligned, not 1024) wgmma_aligned must skip 496
// bytes for the swizzled stages, which the kernels' 1024 spare bytes hold:
// the same bits, and memcheck and racecheck clean.
TEST(GpuGemmTensorCore, V6AndV7AlignTheirStagesWhereverSharedMemoryStarts) {
  if (!device_runs_wgmma()) GTEST_SKIP() << why_no_wgmma();
  for (int version : {6, 7})
    for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16}) {
      if (version == 6 && p == TensorCorePrecision::bf16) continue;
      Case c;
      c.precision = p, c.M = 130, c.N = 140, c.K = 100, c.trans_b = true;
      const Result at0 = run(c, version, 4);
      const convkit::sim::ScopedDynamicSharedAddress moved(528);
      const convkit::sim::ScopedChecks checks(convkit::sim::Checks::parse(
          convkit::sim::checks_available() ? "memcheck,racecheck" : ""));
      ASSERT_EQ(at0.c, run(c, version, 4).c) << c.str() << " v" << version;
    }
}

convkit::sim::KernelProfile profiled(TensorCorePrecision p, std::int64_t M, std::int64_t N, std::int64_t K,
                                     int version) {
  const convkit::sim::ScopedProfile profile;
  Tensor a = Tensor::empty({M * K}, kernel_options(DType::float32)).fill_(1);
  Tensor b = Tensor::empty({K * N}, kernel_options(DType::float32)).fill_(1);
  Tensor c = Tensor::empty({M * N}, kernel_options(DType::float32));
  GemmArgs g;
  g.M = M, g.N = N, g.K = K, g.a = a.data<float>(), g.b = b.data<float>(), g.c = c.data<float>();
  g.lda = K, g.ldb = N, g.ldc = N;
  kernels::launch_gemm_tensor_core(p, DType::float32, g, version);
  EXPECT_EQ(c.to_vector<float>()[0], static_cast<float>(K));
  convkit::sim::KernelProfile total;
  for (const convkit::sim::KernelProfile& k : convkit::sim::take_profile()) total += k;
  return total;
}

// The profile of one 128 x 128 x 64 product of ones with the given
// transposes (each operand's leading dim its own extent), checked for its
// value; summed over the launch's kernels.
convkit::sim::KernelProfile profiled_layout(TensorCorePrecision p, bool ta, bool tb, int version,
                                            const std::string& what) {
  const convkit::sim::ScopedProfile profile;
  constexpr std::int64_t n = 128, k = 64;
  Tensor a = Tensor::empty({n * k}, kernel_options(DType::float32)).fill_(1);
  Tensor b = Tensor::empty({k * n}, kernel_options(DType::float32)).fill_(1);
  Tensor c = Tensor::empty({n * n}, kernel_options(DType::float32));
  GemmArgs g;
  g.M = g.N = n, g.K = k, g.trans_a = ta, g.trans_b = tb;
  g.a = a.data<float>(), g.b = b.data<float>(), g.c = c.data<float>();
  g.lda = ta ? n : k, g.ldb = tb ? k : n, g.ldc = n;
  kernels::launch_gemm_tensor_core(p, DType::float32, g, version);
  EXPECT_EQ(c.to_vector<float>()[0], static_cast<float>(k)) << what;
  convkit::sim::KernelProfile total;
  for (const convkit::sim::KernelProfile& kp : convkit::sim::take_profile()) total += kp;
  return total;
}

// Every mma.sync is counted as 16*8*K tensor-core multiply-adds of its
// precision, and none as FP32; both versions cover C with whole mma tiles.
// v2's fragment loads from shared memory (the padded rows) are free of bank
// conflicts; its only conflicts are the 2-way ones of the k-contiguous
// staging stores (the v2 head says why).
TEST(GpuGemmTensorCore, TheSimProfileCountsMmaAndV2FragmentLoadsAreConflictFree) {
  if (!convkit::sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  for (int v : {1, 2}) {
    const convkit::sim::KernelProfile t = profiled(TensorCorePrecision::tf32, 64, 64, 64, v);
    EXPECT_EQ(t.tf32_fmas, 64u * 64 * 64) << "v" << v;
    EXPECT_EQ(t.bf16_fmas, 0u);
    EXPECT_EQ(t.fmas, 0u);
    const convkit::sim::KernelProfile b = profiled(TensorCorePrecision::bf16, 64, 64, 64, v);
    EXPECT_EQ(b.bf16_fmas, 64u * 64 * 64) << "v" << v;
    EXPECT_EQ(b.tf32_fmas, 0u);
  }
  // 33 x 9 x 20: v1 runs 3 x 2 tiles of 16x8 over 3 k-steps of 8 (tf32).
  EXPECT_EQ(profiled(TensorCorePrecision::tf32, 33, 9, 20, 1).tf32_fmas, 3u * 2 * 16 * 8 * 8 * 3);
  const convkit::sim::KernelProfile v2 = profiled(TensorCorePrecision::tf32, 128, 128, 64, 2);
  EXPECT_EQ(v2.shared_load.conflict_wavefronts, 0u);
  EXPECT_GT(v2.shared_load.requests, 0u);
  // v3 on one whole 128x128 tile: its mma count, and its fragment loads free
  // of conflicts in both shared layouts (A k-contiguous, B n-contiguous).
  for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16}) {
    const convkit::sim::KernelProfile v3 = profiled(p, 128, 128, 64, 3);
    EXPECT_EQ(p == TensorCorePrecision::tf32 ? v3.tf32_fmas : v3.bf16_fmas, 128u * 128 * 64);
    EXPECT_EQ(v3.shared_load.conflict_wavefronts, 0u) << kernels::precision_name(p);
    EXPECT_GT(v3.shared_load.requests, 0u);
  }
}

// v4's pitches are chosen per precision and orientation (its head): with
// every transpose pair, in both precisions, its fragment reads and its
// 16-byte copies' stores are free of bank conflicts, and its copies use
// every byte of the sectors they fetch. v5 keeps the layouts: its whole
// copies and its rounding's 16-byte loads and stores are conflict-free too.
TEST(GpuGemmTensorCore, TheSimProfileSeesV4AndV5ConflictFreeInEveryLayout) {
  if (!convkit::sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  for (int version : {4, 5})
  for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16})
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const std::string what =
          detail::concat("v", version, " ", kernels::precision_name(p), ta ? " At" : "", tb ? " Bt" : "");
      const convkit::sim::KernelProfile v4 = profiled_layout(p, ta, tb, version, what);
      EXPECT_EQ(p == TensorCorePrecision::tf32 ? v4.tf32_fmas : v4.bf16_fmas, 128u * 128 * 64) << what;
      EXPECT_GT(v4.shared_load.requests, 0u) << what;
      EXPECT_EQ(v4.shared_load.conflict_wavefronts, 0u) << what;
      EXPECT_EQ(v4.shared_store.conflict_wavefronts, 0u) << what;
      // The copies are the only global loads (beta is 0): every sector fetched is used whole.
      EXPECT_EQ(v4.global_load.sectors * 32, v4.global_load.bytes) << what;
    }
}

// v6's 128-byte swizzle puts a quarter-warp's eight 16-byte copies of one row
// on eight distinct bank groups: its copies' stores and its rounding's loads
// and stores are free of conflicts, and its copies use every byte they fetch.
// Each wgmma counts 64 x 128 x 8 tensor-core multiply-adds, and its operand
// reads count as conflict-free (the profile's rule for them, docs/sim.md).
TEST(GpuGemmTensorCore, TheSimProfileSeesV6CopiesAndRoundingConflictFree) {
  if (!device_runs_wgmma()) GTEST_SKIP() << why_no_wgmma();
  if (!convkit::sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  const convkit::sim::KernelProfile v6 = profiled_layout(TensorCorePrecision::tf32, false, true, 6, "v6");
  EXPECT_EQ(v6.tf32_fmas, 128u * 128 * 64);
  EXPECT_EQ(v6.fmas, 0u);
  // The rounding's 16-byte loads (wgmma's reads count as conflict-free by rule).
  EXPECT_EQ(v6.shared_load.conflict_wavefronts, 0u);
  EXPECT_EQ(v6.shared_store.conflict_wavefronts, 0u);
  EXPECT_EQ(v6.global_load.sectors * 32, v6.global_load.bytes);
}

// v7 stores what it loads into its stages K-major, transposing an
// x-contiguous operand, with the store order rotated per lane (its head):
// in every layout and both precisions, its stores are free of bank
// conflicts, and its 16-byte loads use every byte they fetch.
TEST(GpuGemmTensorCore, TheSimProfileSeesV7StoresConflictFreeInEveryLayout) {
  if (!device_runs_wgmma()) GTEST_SKIP() << why_no_wgmma();
  if (!convkit::sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  for (TensorCorePrecision p : {TensorCorePrecision::tf32, TensorCorePrecision::bf16})
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const std::string what = detail::concat("v7 ", kernels::precision_name(p), ta ? " At" : "", tb ? " Bt" : "");
      const convkit::sim::KernelProfile v7 = profiled_layout(p, ta, tb, 7, what);
      EXPECT_EQ(p == TensorCorePrecision::tf32 ? v7.tf32_fmas : v7.bf16_fmas, 128u * 128 * 64) << what;
      EXPECT_GT(v7.shared_store.requests, 0u) << what;
      EXPECT_EQ(v7.shared_store.conflict_wavefronts, 0u) << what;
      EXPECT_EQ(v7.global_load.sectors * 32, v7.global_load.bytes) << what;
    }
}
#endif

}  // namespace
}  // namespace convkit
