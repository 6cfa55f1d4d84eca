// Every CPU convolution algorithm, every pass, float32 and float64, on every
// test descriptor: against the float64 reference, against the direct
// algorithm, and (float64) as exact adjoints of each other.
#include <gtest/gtest.h>

#include <cstddef>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "convkit/core/error.h"
#include "cpu/conv/conv_algorithm.h"
#include "cpu/conv/conv_common.h"
#include "cpu/conv/implementations.h"
#include "cpu/conv/tap_gemm.h"
#include "cpu/conv/conv_reference.h"
#include "cpu/conv/conv_tolerance.h"

namespace convkit::cpu::testing {
namespace {

// Random inputs of one case, as float64 values exactly representable in T.
template <typename T>
struct Inputs {
  std::vector<double> x, w, b, dy;
  explicit Inputs(const Conv2dDesc& d, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    x = random_values<T>(x_size(d), rng);
    w = random_values<T>(w_size(d), rng);
    b = random_values<T>(d.K, rng);
    dy = random_values<T>(y_size(d), rng);
  }
};

template <typename T>
struct Outputs {
  std::vector<T> y, dx, dw, db;
};

// Runs all three passes of `algo` in precision T.
template <typename T>
Outputs<T> run_passes(const ConvAlgorithm& algo, const Conv2dDesc& d, const Inputs<T>& in, bool with_bias = true) {
  const DType dtype = dtype_of<T>::value;
  std::vector<std::byte> workspace(algo.workspace_bytes(d, dtype));
  const std::vector<T> x = cast_to<T>(in.x), w = cast_to<T>(in.w), b = cast_to<T>(in.b), dy = cast_to<T>(in.dy);
  Outputs<T> out;
  out.y.assign(static_cast<std::size_t>(y_size(d)), T(-7));  // garbage: every pass must overwrite
  out.dx.assign(static_cast<std::size_t>(x_size(d)), T(-7));
  out.dw.assign(static_cast<std::size_t>(w_size(d)), T(-7));
  out.db.assign(static_cast<std::size_t>(d.K), T(-7));
  algo.forward(d, dtype, x.data(), w.data(), with_bias ? b.data() : nullptr, out.y.data(), workspace.data());
  algo.backward_data(d, dtype, dy.data(), w.data(), out.dx.data(), workspace.data());
  algo.backward_weights(d, dtype, x.data(), dy.data(), out.dw.data(), out.db.data(), workspace.data());
  return out;
}

std::uint64_t case_seed(std::size_t index) { return 1000 + index; }

// What winograd computes: 3x3 filters at stride 1 without dilation.
bool winograd_shape(const Conv2dDesc& d) {
  return d.R == 3 && d.S == 3 && d.stride_h == 1 && d.stride_w == 1 && d.dilation_h == 1 && d.dilation_w == 1;
}

// An algorithm as registered, winograd held to one output tile size (tile
// 2 or 4) or to Eigen for its products, or im2col_gemm held to one GEMM
// kernel, so that every tile size and kernel runs every case.
struct Variant {
  ConvAlgo algo;
  int tile = 0;
  GemmKernel kernel = GemmKernel::automatic;
};
const ConvAlgorithm& variant_algorithm(const Variant& v) {
  if (v.algo == ConvAlgo::winograd && (v.tile != 0 || v.kernel != GemmKernel::automatic))
    return winograd_conv_algorithm_with(v.tile, v.kernel);
  if (v.kernel != GemmKernel::automatic) return im2col_gemm_conv_algorithm_with_kernel(v.kernel);
  return conv_algorithm(v.algo);
}
std::string variant_name(const Variant& v) {
  std::string name(conv_algo_name(v.algo));
  if (v.tile != 0) name += "_f" + std::to_string(v.tile);
  if (v.kernel == GemmKernel::eigen) name += "_eigen";
  if (v.kernel == GemmKernel::taps) name += "_taps";
  return name;
}

class ConvAlgorithmCase : public ::testing::TestWithParam<std::tuple<Variant, std::size_t>> {
 protected:
  const ConvAlgorithm& algo() const { return variant_algorithm(std::get<0>(GetParam())); }
  const ConvCase& conv_case() const { return conv_cases()[std::get<1>(GetParam())]; }
  std::uint64_t seed() const { return case_seed(std::get<1>(GetParam())); }

  // True when the algorithm runs this case; otherwise checks it refuses clearly.
  bool runs_case() const {
    const Support support = algo().supports(conv_case().desc);
    if (support.ok) return true;
    // The only refusals among the test cases: fft with a stride, and winograd
    // with anything but a 3x3 filter at stride 1 without dilation.
    const Conv2dDesc& d = conv_case().desc;
    if (algo().algo() == ConvAlgo::fft) {
      EXPECT_NE(support.reason.find("stride 1 only"), std::string::npos) << support.reason;
    } else {
      EXPECT_EQ(algo().algo(), ConvAlgo::winograd) << support.reason;
      EXPECT_FALSE(winograd_shape(d)) << support.reason;
    }
    std::vector<float> buffer(1);
    EXPECT_THROW(algo().forward(conv_case().desc, DType::float32, buffer.data(), buffer.data(), nullptr,
                                buffer.data(), buffer.data()),
                 Error);
    return false;
  }

  template <typename T>
  void check_against_reference() {
    const Conv2dDesc& d = conv_case().desc;
    const Inputs<T> in(d, seed());
    const Outputs<T> out = run_passes<T>(algo(), d, in);
    const ConvAlgo a = algo().algo();
    const Reference y = reference_forward(d, in.x, in.w, in.b);
    EXPECT_TRUE(all_within(out.y, y.value, tolerances<T>(a, y))) << "forward " << d;
    const Reference dx = reference_backward_data(d, in.dy, in.w);
    EXPECT_TRUE(all_within(out.dx, dx.value, tolerances<T>(a, dx))) << "backward_data " << d;
    const Reference dw = reference_backward_weights(d, in.x, in.dy);
    EXPECT_TRUE(all_within(out.dw, dw.value, tolerances<T>(a, dw))) << "backward_weights dw " << d;
    // The bias gradient is the same sum for every algorithm: componentwise bound.
    const Reference db = reference_bias_gradient(d, in.dy);
    EXPECT_TRUE(all_within(out.db, db.value, tolerances<T>(ConvAlgo::direct, db))) << "backward_weights db " << d;
  }

  // Agreement with direct: both lie within their tolerance of the reference,
  // so they may differ by the sum of the two.
  template <typename T>
  void check_against_direct() {
    const Conv2dDesc& d = conv_case().desc;
    const Inputs<T> in(d, seed());
    const Outputs<T> mine = run_passes<T>(algo(), d, in);
    const Outputs<T> direct = run_passes<T>(conv_algorithm(ConvAlgo::direct), d, in);
    const ConvAlgo a = algo().algo();
    auto compare = [&](const std::vector<T>& got, const std::vector<T>& other, const Reference& ref, const char* what) {
      std::vector<double> tol = tolerances<T>(a, ref);
      const std::vector<double> direct_tol = tolerances<T>(ConvAlgo::direct, ref);
      for (std::size_t i = 0; i < tol.size(); ++i) tol[i] += direct_tol[i];
      EXPECT_TRUE(all_within(got, std::vector<double>(other.begin(), other.end()), tol)) << what << " " << d;
    };
    compare(mine.y, direct.y, reference_forward(d, in.x, in.w, in.b), "forward");
    compare(mine.dx, direct.dx, reference_backward_data(d, in.dy, in.w), "backward_data");
    compare(mine.dw, direct.dw, reference_backward_weights(d, in.x, in.dy), "backward_weights");
  }
};

TEST_P(ConvAlgorithmCase, MatchesFloat64ReferenceInFloat32) {
  if (runs_case()) check_against_reference<float>();
}

TEST_P(ConvAlgorithmCase, MatchesFloat64ReferenceInFloat64) {
  if (runs_case()) check_against_reference<double>();
}

TEST_P(ConvAlgorithmCase, AgreesWithDirectInFloat32) {
  if (runs_case()) check_against_direct<float>();
}

TEST_P(ConvAlgorithmCase, AgreesWithDirectInFloat64) {
  if (runs_case()) check_against_direct<double>();
}

// The backward passes are the adjoints of the forward map, which is bilinear in
// (x, w):  <conv(x, w), dy> = <x, backward_data(dy, w)> = <w, backward_weights(x, dy)>,
// and for the bias <conv(0, w) + b, dy> = <b, db>. This is a gradient check
// without finite differences. The three inner products differ only by float64
// rounding, at most n*u*S with S = sum over all connections of |x*w*dy| and n
// below 2e4 here (~2e-12*S); we allow 1e-10*S. A wrong or missing term shifts
// an inner product by about sqrt(terms affected)/n * S, far more.
TEST_P(ConvAlgorithmCase, BackwardPassesAreAdjointsOfForward) {
  if (!runs_case()) return;
  const Conv2dDesc& d = conv_case().desc;
  const Inputs<double> in(d, seed());
  const Outputs<double> out = run_passes<double>(algo(), d, in, /*with_bias=*/false);
  auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
    return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
  };
  std::vector<double> abs_x(in.x), abs_w(in.w), abs_dy(in.dy);
  for (auto* v : {&abs_x, &abs_w, &abs_dy})
    for (double& e : *v) e = std::abs(e);
  const double scale = dot(reference_forward(d, abs_x, abs_w, {}).value, abs_dy);
  const double through_y = dot(out.y, in.dy);
  const double through_x = dot(in.x, out.dx);
  const double through_w = dot(in.w, out.dw);
  EXPECT_NEAR(through_x, through_y, 1e-10 * scale) << d;
  EXPECT_NEAR(through_w, through_y, 1e-10 * scale) << d;
  // Bias: forward of a zero image is b broadcast over N, P, Q.
  const Conv2dDesc& desc = d;
  std::vector<double> zeros(in.x.size(), 0.0), y_bias(out.y.size());
  std::vector<std::byte> workspace(algo().workspace_bytes(desc, DType::float64));
  algo().forward(desc, DType::float64, zeros.data(), in.w.data(), in.b.data(), y_bias.data(), workspace.data());
  double bias_scale = 0;
  for (std::size_t i = 0; i < y_bias.size(); ++i) bias_scale += std::abs(y_bias[i] * in.dy[i]);
  EXPECT_NEAR(dot(in.b, out.db), dot(y_bias, in.dy), 1e-10 * std::max(bias_scale, 1e-300)) << d;
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<Variant, std::size_t>>& info) {
  const std::size_t index = std::get<1>(info.param);
  return variant_name(std::get<0>(info.param)) + "_" + std::to_string(index) + "_" + conv_cases()[index].name;
}

INSTANTIATE_TEST_SUITE_P(AllCases, ConvAlgorithmCase,
                         ::testing::Combine(::testing::Values(Variant{ConvAlgo::direct}, Variant{ConvAlgo::im2col_gemm},
                                                              Variant{ConvAlgo::fft}, Variant{ConvAlgo::winograd},
                                                              Variant{ConvAlgo::winograd, 2},
                                                              Variant{ConvAlgo::winograd, 4},
                                                              Variant{ConvAlgo::winograd, 0, GemmKernel::eigen},
                                                              Variant{ConvAlgo::im2col_gemm, 0, GemmKernel::eigen},
                                                              Variant{ConvAlgo::im2col_gemm, 0, GemmKernel::taps}),
                                            ::testing::Range<std::size_t>(0, conv_cases().size())),
                         case_name);

// The tap kernels against their simple twin, the Eigen kernel, on every
// case: each lies within its tolerance of the float64 reference, so they may
// differ by twice that.
class TapGemmTwinCase : public ::testing::TestWithParam<std::size_t> {};

TEST_P(TapGemmTwinCase, TapsAgreeWithTheEigenKernelInFloat32) {
  const Conv2dDesc& d = conv_cases()[GetParam()].desc;
  if (!tap_gemm_compiled()) GTEST_SKIP() << "this build has no AVX2 + FMA tap kernels";
  const Inputs<float> in(d, case_seed(GetParam()));
  const Outputs<float> taps = run_passes<float>(im2col_gemm_conv_algorithm_with_kernel(GemmKernel::taps), d, in);
  const Outputs<float> eigen = run_passes<float>(im2col_gemm_conv_algorithm_with_kernel(GemmKernel::eigen), d, in);
  auto compare = [&](const std::vector<float>& a, const std::vector<float>& b, const Reference& ref, const char* what) {
    std::vector<double> tol = tolerances<float>(ConvAlgo::im2col_gemm, ref);
    for (double& t : tol) t *= 2;
    EXPECT_TRUE(all_within(a, std::vector<double>(b.begin(), b.end()), tol)) << what << " " << d;
  };
  compare(taps.y, eigen.y, reference_forward(d, in.x, in.w, in.b), "forward");
  compare(taps.dx, eigen.dx, reference_backward_data(d, in.dy, in.w), "backward_data");
  compare(taps.dw, eigen.dw, reference_backward_weights(d, in.x, in.dy), "backward_weights");
  EXPECT_EQ(taps.db, eigen.db) << "the bias gradient is the same double sum in both " << d;
}

// winograd's products on the tap kernels against Eigen, their twin, on every
// case winograd computes, with each output tile size.
class WinogradTapsTwinCase : public ::testing::TestWithParam<std::size_t> {};

TEST_P(WinogradTapsTwinCase, ProductsOnTapsAgreeWithEigenInFloat32) {
  const Conv2dDesc& d = conv_cases()[GetParam()].desc;
  if (!tap_gemm_compiled()) GTEST_SKIP() << "this build has no AVX2 + FMA tap kernels";
  const Inputs<float> in(d, case_seed(GetParam()));
  for (int tile : {2, 4}) {
    const Outputs<float> taps = run_passes<float>(winograd_conv_algorithm_with(tile, GemmKernel::taps), d, in);
    const Outputs<float> eigen = run_passes<float>(winograd_conv_algorithm_with(tile, GemmKernel::eigen), d, in);
    auto compare = [&](const std::vector<float>& a, const std::vector<float>& b, const Reference& ref,
                       const char* what) {
      std::vector<double> tol = tolerances<float>(ConvAlgo::winograd, ref);
      for (double& t : tol) t *= 2;
      EXPECT_TRUE(all_within(a, std::vector<double>(b.begin(), b.end()), tol)) << what << " F(" << tile << ") " << d;
    };
    compare(taps.y, eigen.y, reference_forward(d, in.x, in.w, in.b), "forward");
    compare(taps.dx, eigen.dx, reference_backward_data(d, in.dy, in.w), "backward_data");
    EXPECT_EQ(taps.dw, eigen.dw) << "backward-weights has no tap kernel: the same products in both, F(" << tile
                                 << ") " << d;
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, TapGemmTwinCase, ::testing::Range<std::size_t>(0, conv_cases().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           return std::to_string(info.param) + "_" + conv_cases()[info.param].name;
                         });

std::vector<std::size_t> winograd_case_indices() {
  std::vector<std::size_t> indices;
  for (std::size_t i = 0; i < conv_cases().size(); ++i)
    if (winograd_shape(conv_cases()[i].desc)) indices.push_back(i);
  return indices;
}

INSTANTIATE_TEST_SUITE_P(WinogradCases, WinogradTapsTwinCase, ::testing::ValuesIn(winograd_case_indices()),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           return std::to_string(info.param) + "_" + conv_cases()[info.param].name;
                         });

TEST(ConvCases, CoverTheRequiredFeatures) {
  const auto& cases = conv_cases();
  EXPECT_GE(cases.size(), 30u);
  auto any = [&](auto predicate) { return std::any_of(cases.begin(), cases.end(), [&](const ConvCase& c) { return predicate(c.desc); }); };
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return d.N == 1; }));
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return d.H % 2 == 1 && d.W % 2 == 1; }));
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return d.H != d.W; }));
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return d.stride_h == 2 && d.stride_w == 2; }));
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return d.pad_top != d.pad_bottom || d.pad_left != d.pad_right; }));
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return d.dilation_h > 1 || d.dilation_w > 1; }));
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return d.groups > 1; }));
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return d.C == 1; }));
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return d.K == 1; }));
  for (std::int64_t k : {5, 7, 11}) EXPECT_TRUE(any([k](const Conv2dDesc& d) { return d.R == k && d.S == k; })) << k;
  // winograd's cases: every edge of the tiling (odd P and Q, padding 0, 1,
  // and past the filter, asymmetric), groups, batch 1, C or K = 1, threads.
  const auto winograd = winograd_shape;
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return winograd(d) && d.N == 1; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return winograd(d) && d.P() % 2 == 1 && d.Q() % 2 == 1; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return winograd(d) && d.pad_top == 0 && d.pad_left == 0; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return winograd(d) && d.pad_top > 2; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return winograd(d) && d.pad_top != d.pad_bottom; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return winograd(d) && d.groups > 1; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return winograd(d) && d.C == 1; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return winograd(d) && d.K == 1; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return winograd(d) && worth_parallelising(d) && d.groups > 1; }));
  // The tap kernels' edges (stride 1): partial and whole 16-column tiles in
  // one row, rows ending mid-vector, channel blocks of 6 and filter blocks
  // of 4 with remainders, tap blocks of 3 with remainders, dilation, and a
  // single image split over threads inside the pass.
  const auto taps = [](const Conv2dDesc& d) { return d.stride_h == 1 && d.stride_w == 1; };
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return taps(d) && d.Q() > 16 && d.Q() % 16 != 0; }));
  // AVX-512 builds: a 32-column tile, then a whole 16-column one, then a partial one.
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return taps(d) && d.Q() > 48 && d.Q() % 32 > 16; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return taps(d) && d.Q() % 8 != 0 && d.W % 16 != 0; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return taps(d) && d.K_per_group() > 6 && d.K_per_group() % 6 != 0; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return taps(d) && d.C_per_group() > 6 && d.C_per_group() % 6 != 0; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return taps(d) && d.K_per_group() > 4 && d.K_per_group() % 4 != 0; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return taps(d) && d.S > 3 && d.S % 3 != 0; }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return taps(d) && (d.dilation_h > 1 || d.dilation_w > 1); }));
  EXPECT_TRUE(any([&](const Conv2dDesc& d) { return taps(d) && d.N == 1 && worth_parallelising(d); }));
  // Some cases are large enough that the algorithms run multi-threaded.
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return worth_parallelising(d) && d.groups == 1; }));
  EXPECT_TRUE(any([](const Conv2dDesc& d) { return worth_parallelising(d) && d.groups > 1; }));
}

}  // namespace
}  // namespace convkit::cpu::testing
