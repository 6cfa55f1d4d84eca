// The GPU FFT convolution (kernels/conv2d_fft.cu) under sim (and cuda, in the nvcc build): the FFT itself
// against a naive DFT in long double (1-D complex, 2-D real, both directions,
// every version), then every pass of the convolution on the stride-1 test
// descriptors of tests/cpu/conv (odd sizes, batch 1, asymmetric padding,
// dilation, groups, C or K = 1, 5x5 to 11x11 filters, many tiles) against
// the float64 reference and against v1, chunked batches, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "convkit/sim/schedule.h"
#include "gpu/gpu_conv_testing.h"
#include "kernels/conv2d_fft.cuh"

namespace convkit::gpu_testing {
namespace {

using cpu::testing::ConvCase;
using Complex = std::complex<long double>;

constexpr long double kPi = 3.141592653589793238462643383279502884L;

// The family must be registered before a test selects one of its versions.
class RegisterFftFamily : public ::testing::Environment {
 public:
  void SetUp() override { kernels::conv2d_fft_version(); }
};
[[maybe_unused]] const ::testing::Environment* const kRegistered =
    ::testing::AddGlobalTestEnvironment(new RegisterFftFamily);

// ============================== the FFT alone ==============================

// X[k] = sum_j x[j] exp(-+2 pi i jk / n), in long double, straight from the
// definition (the exponentials come from a table indexed by jk mod n).
std::vector<Complex> naive_dft(const std::vector<Complex>& x, bool inverse) {
  const std::size_t n = x.size();
  std::vector<Complex> root(n);
  for (std::size_t k = 0; k < n; ++k) {
    const long double angle = (inverse ? 2 : -2) * kPi * static_cast<long double>(k) / static_cast<long double>(n);
    root[k] = Complex(std::cos(angle), std::sin(angle));
  }
  std::vector<Complex> out(n);
  for (std::size_t k = 0; k < n; ++k) {
    Complex sum = 0;
    for (std::size_t j = 0; j < n; ++j) sum += x[j] * root[(j * k) % n];
    out[k] = sum;
  }
  return out;
}

// The 2-D DFT of a th x tw array, by definition separable: 1-D DFTs of the
// rows, then of the columns.
std::vector<Complex> naive_dft_2d(const std::vector<Complex>& x, int th, int tw) {
  std::vector<Complex> rows(x.size()), out(x.size());
  for (int i = 0; i < th; ++i) {
    const std::vector<Complex> r = naive_dft(std::vector<Complex>(x.begin() + i * tw, x.begin() + (i + 1) * tw), false);
    std::copy(r.begin(), r.end(), rows.begin() + i * tw);
  }
  for (int j = 0; j < tw; ++j) {
    std::vector<Complex> column(static_cast<std::size_t>(th));
    for (int i = 0; i < th; ++i) column[i] = rows[i * tw + j];
    const std::vector<Complex> c = naive_dft(column, false);
    for (int i = 0; i < th; ++i) out[i * tw + j] = c[i];
  }
  return out;
}

// An FFT's error is bounded norm-wise: ||error||_2 <= c * log2(n) * eps * ||X||_2
// with ||X||_2 = sqrt(n) ||x||_2. We allow c = 4 on every element; an
// indexing or twiddle bug is O(|X|), orders of magnitude more.
template <typename T>
double fft_tolerance(std::size_t n, double x_norm2) {
  const double log2n = std::max(1.0, std::log2(static_cast<double>(n)));
  return 4 * std::numeric_limits<T>::epsilon() * log2n * std::sqrt(static_cast<double>(n)) * x_norm2;
}

template <typename T>
void check_fft_1d(int n, bool inverse) {
  const std::int64_t count = 3;
  std::mt19937_64 rng(77 + static_cast<std::uint64_t>(n));
  const std::vector<double> values = random_values<T>(2 * n * count, rng);
  const Tensor on_device = device_tensor<T>(values);
  kernels::launch_fft_1d(dtype_of<T>::value, on_device.raw_data(), n, count, inverse);
  const std::vector<T> data = on_device.to_vector<T>();
  for (std::int64_t s = 0; s < count; ++s) {
    std::vector<Complex> x(static_cast<std::size_t>(n));
    double norm2 = 0;
    for (int j = 0; j < n; ++j) {
      x[j] = Complex(values[2 * (s * n + j)], values[2 * (s * n + j) + 1]);
      norm2 += std::norm(std::complex<double>(x[j]));
    }
    const std::vector<Complex> want = naive_dft(x, inverse);
    const double tol = fft_tolerance<T>(static_cast<std::size_t>(n), std::sqrt(norm2));
    for (int k = 0; k < n; ++k) {
      const Complex got(data[2 * (s * n + k)], data[2 * (s * n + k) + 1]);
      ASSERT_LE(static_cast<double>(std::abs(got - want[k])), tol)
          << "n=" << n << " signal " << s << " bin " << k << (inverse ? " inverse " : " forward ")
          << dtype_of<T>::value;
    }
  }
}

TEST(GpuFft, OneDimensionalMatchesANaiveDftForEveryPowerOfTwo) {
  for (int n = 1; n <= kernels::kMaxGpuFftSize; n *= 2) {
    for (bool inverse : {false, true}) {
      check_fft_1d<float>(n, inverse);
      check_fft_1d<double>(n, inverse);
    }
  }
}

TEST(GpuFft, RejectsLengthsThatAreNotPowersOfTwo) {
  const Tensor data = zeros({2 * 12}, TensorOptions().device(kernel_device()));
  EXPECT_THROW(kernels::launch_fft_1d(DType::float32, data.raw_data(), 12, 1, false), Error);
  EXPECT_THROW(kernels::launch_fft_1d(DType::float32, data.raw_data(), 2048, 1, false), Error);
}

// The 2-D real transform of `count` tiles, as the convolution runs it (rows,
// then columns, spectra frequency-major), against a naive 2-D DFT; then the
// inverse brings the tiles back.
template <typename T>
void check_real_fft_2d(int version, int th, int tw, std::int64_t count = 5) {  // odd: v2's and v4's last pair has one
  const int bins = tw / 2 + 1;
  const std::int64_t F = static_cast<std::int64_t>(th) * bins;
  std::mt19937_64 rng(static_cast<std::uint64_t>(th * 1000 + tw));
  const std::vector<double> values = random_values<T>(count * th * tw, rng);
  const Tensor tiles = device_tensor<T>(values);
  const Tensor spectra_on_device = garbage<T>(2 * F * count);
  kernels::launch_rfft2d(version, dtype_of<T>::value, tiles.raw_data(), th, tw, count, spectra_on_device.raw_data(),
                         nullptr);
  const std::vector<T> spectra = spectra_on_device.to_vector<T>();
  const std::string where = "v" + std::to_string(version) + " " + std::to_string(th) + "x" + std::to_string(tw) +
                            " " + std::string(dtype_name(dtype_of<T>::value)) + " count " + std::to_string(count);
  for (std::int64_t x = 0; x < count; ++x) {
    double norm2 = 0;
    std::vector<Complex> tile(static_cast<std::size_t>(th * tw));
    for (int e = 0; e < th * tw; ++e) {
      tile[e] = values[x * th * tw + e];
      norm2 += values[x * th * tw + e] * values[x * th * tw + e];
    }
    const std::vector<Complex> want = naive_dft_2d(tile, th, tw);
    const double tol = fft_tolerance<T>(static_cast<std::size_t>(th * tw), std::sqrt(norm2));
    for (int u = 0; u < th; ++u) {
      for (int v = 0; v < bins; ++v) {
        const std::int64_t at = 2 * ((static_cast<std::int64_t>(u) * bins + v) * count + x);
        const Complex got(spectra[at], spectra[at + 1]);
        ASSERT_LE(static_cast<double>(std::abs(got - want[u * tw + v])), tol)
            << where << " tile " << x << " bin " << u << "," << v;
      }
    }
  }
  const Tensor back_on_device = garbage<T>(tiles.numel());
  kernels::launch_irfft2d(version, dtype_of<T>::value, spectra_on_device.raw_data(), th, tw, count,
                          back_on_device.raw_data(), nullptr);
  const std::vector<T> back = back_on_device.to_vector<T>();
  for (std::int64_t x = 0; x < count; ++x) {
    double norm2 = 0;
    for (int e = 0; e < th * tw; ++e) norm2 += values[x * th * tw + e] * values[x * th * tw + e];
    const double tol = 2 * fft_tolerance<T>(static_cast<std::size_t>(th * tw), std::sqrt(norm2)) / std::sqrt(th * tw);
    for (int e = 0; e < th * tw; ++e) {
      const double got = static_cast<double>(back[x * th * tw + e]) / (th * tw);
      ASSERT_LE(std::abs(got - values[x * th * tw + e]), tol) << where << " round trip, tile " << x << " element " << e;
    }
  }
}

TEST(GpuFft, RealTwoDimensionalMatchesANaiveDftAndInvertsForEveryVersion) {
  const std::vector<std::pair<int, int>> shapes = {{1, 2},  {2, 2},   {1, 16},  {4, 8},  {8, 4},
                                                   {16, 16}, {32, 64}, {64, 64}, {128, 2}, {2, 128}};
  for (int version : {1, 2, 4}) {
    for (const auto& [th, tw] : shapes) {
      check_real_fft_2d<float>(version, th, tw);
      check_real_fft_2d<double>(version, th, tw);
    }
  }
}

// v4 fuses a transform into one block where a pair of tiles fits 48 KB of
// shared memory, and runs v2's passes where it does not; the shapes above
// take both paths in both precisions.
TEST(GpuFft, FusedTransformCoversTheTilesThatFitABlock) {
  EXPECT_TRUE(kernels::fft_transform_fused(DType::float32, 8, 16));
  EXPECT_TRUE(kernels::fft_transform_fused(DType::float32, 32, 64));
  EXPECT_FALSE(kernels::fft_transform_fused(DType::float64, 32, 64));
  EXPECT_FALSE(kernels::fft_transform_fused(DType::float32, 64, 64));
  EXPECT_TRUE(kernels::fft_transform_fused(DType::float64, 2, 128));
}

#if !defined(__CUDACC__)
// v4's transforms, the register ones too, run v2's butterflies with v2's
// twiddles and pair the same tiles when their count is even: under sim their
// spectra and inverses are v2's bits. (nvcc may contract the two versions'
// arithmetic differently; on a GPU the bounds above are the test.)
template <typename T>
void expect_fused_transform_is_version_2(int th, int tw, std::int64_t count) {
  const std::int64_t spectrum = 2 * static_cast<std::int64_t>(th) * (tw / 2 + 1) * count;
  std::mt19937_64 rng(static_cast<std::uint64_t>(th * 31 + tw + count));
  const Tensor tiles = device_tensor<T>(random_values<T>(count * th * tw, rng));
  std::vector<std::vector<T>> spectra, back;
  for (int version : {2, 4}) {
    const Tensor s = garbage<T>(spectrum), b = garbage<T>(tiles.numel());
    kernels::launch_rfft2d(version, dtype_of<T>::value, tiles.raw_data(), th, tw, count, s.raw_data(), nullptr);
    spectra.push_back(s.to_vector<T>());
    kernels::launch_irfft2d(version, dtype_of<T>::value, s.raw_data(), th, tw, count, b.raw_data(), nullptr);
    back.push_back(b.to_vector<T>());
  }
  const std::string where = std::to_string(th) + "x" + std::to_string(tw) + " count " + std::to_string(count) + " " +
                            std::string(dtype_name(dtype_of<T>::value));
  EXPECT_EQ(spectra[0], spectra[1]) << where << " spectra";
  EXPECT_EQ(back[0], back[1]) << where << " inverse";
}

TEST(GpuFft, FusedTransformGivesVersion2sBits) {
  // Register lengths (up to 16) and shared-memory ones, one block and several.
  for (const auto& [th, tw] : std::vector<std::pair<int, int>>{{1, 2}, {4, 8}, {8, 16}, {16, 16}, {32, 32}, {2, 128}}) {
    for (std::int64_t count : {6, 40}) {
      expect_fused_transform_is_version_2<float>(th, tw, count);
      expect_fused_transform_is_version_2<double>(th, tw, count);
    }
  }
}
#endif

// Many blocks of fused tiles, the last one part full: 16 tiles of 16 x 16 a
// block (37 tiles, 3 blocks), 128 of 4 x 8 (300 tiles, 3 blocks).
TEST(GpuFft, FusedTransformSpansBlocks) {
  check_real_fft_2d<float>(4, 16, 16, 37);
  check_real_fft_2d<double>(4, 16, 16, 37);
  check_real_fft_2d<float>(4, 4, 8, 300);
}

// ============================== the channel sums ==============================

// The batched complex GEMM of every version against long double, on a product
// large enough for v4's 64 x 64 register tiles (rows and columns over 32,
// 264 blocks: 132 frequencies of 1 x 2 tiles), with every edge cut (rows 33,
// columns 65, depth 17: a partial tile in each direction and a partial step
// in k), in the forward layout (B's columns unit stride) and the
// backward-weights layout (A's and B's k unit stride), conjugating and
// accumulating.
template <typename T>
void check_spectral_gemm(int version, bool weights_layout, bool conj_a, bool accumulate) {
  const int F = 132, rows = 33, cols = 65, depth = 17;
  std::mt19937_64 rng(static_cast<std::uint64_t>(version * 8 + weights_layout * 4 + conj_a * 2 + accumulate));
  const std::vector<double> a_values = random_values<T>(2 * F * rows * depth, rng);
  const std::vector<double> b_values = random_values<T>(2 * F * depth * cols, rng);
  const std::vector<double> c_values = random_values<T>(2 * F * rows * cols, rng);
  const Tensor a = device_tensor<T>(a_values), b = device_tensor<T>(b_values), c = device_tensor<T>(c_values);
  kernels::SpectralGemm g{};
  g.a = a.raw_data(), g.b = b.raw_data(), g.c = c.raw_data();
  g.F = F, g.groups = 1, g.rows = rows, g.cols = cols, g.depth = depth;
  // A is [f][r][k] (k unit stride) or [f][k][r]; B [f][k][c] or [f][c][k]; C [f][r][c].
  g.a_f = static_cast<std::int64_t>(rows) * depth;
  g.a_r = weights_layout ? depth : 1, g.a_k = weights_layout ? 1 : rows;
  g.b_f = static_cast<std::int64_t>(depth) * cols;
  g.b_k = weights_layout ? 1 : cols, g.b_c = weights_layout ? depth : 1;
  g.c_f = static_cast<std::int64_t>(rows) * cols, g.c_r = cols, g.c_c = 1;
  g.a_g = g.b_g = g.c_g = 0;
  g.conj_a = conj_a, g.accumulate = accumulate;
#if !defined(__CUDACC__)  // which kernel ran is sim's to tell (once: profiling is slow)
  if (version == 4 && sizeof(T) == 4 && !weights_layout && convkit::sim::checks_available()) {
    convkit::sim::ScopedProfile profile;
    kernels::launch_spectral_gemm(version, dtype_of<T>::value, g);
    const std::vector<convkit::sim::KernelProfile> ran = profile.take();
    ASSERT_EQ(ran.size(), 1u);
    EXPECT_EQ(ran[0].kernel, "spectral_gemm_tiled<float, 64, 4>");
  } else {
    kernels::launch_spectral_gemm(version, dtype_of<T>::value, g);
  }
#else
  kernels::launch_spectral_gemm(version, dtype_of<T>::value, g);
#endif
  const std::vector<T> got = c.to_vector<T>();
  const std::string where = "v" + std::to_string(version) + (weights_layout ? " weights layout" : " forward layout") +
                            (conj_a ? " conj" : "") + (accumulate ? " accumulate " : " ") +
                            std::string(dtype_name(dtype_of<T>::value));
  for (int f = 0; f < F; ++f) {
    for (int r = 0; r < rows; ++r) {
      for (int col = 0; col < cols; ++col) {
        Complex want = 0;
        long double magnitude = 0;
        for (int k = 0; k < depth; ++k) {
          const std::int64_t ai = f * g.a_f + r * g.a_r + k * g.a_k, bi = f * g.b_f + k * g.b_k + col * g.b_c;
          Complex av(a_values[2 * ai], a_values[2 * ai + 1]);
          if (conj_a) av = std::conj(av);
          const Complex bv(b_values[2 * bi], b_values[2 * bi + 1]);
          want += av * bv;
          magnitude += std::abs(av) * std::abs(bv);
        }
        const std::int64_t ci = f * g.c_f + r * g.c_r + col;
        if (accumulate) want += Complex(c_values[2 * ci], c_values[2 * ci + 1]);
        const Complex have(got[2 * ci], got[2 * ci + 1]);
        // Each complex product is four real roundings, each sum one per term.
        const long double tol = 4 * (depth + 4) * std::numeric_limits<T>::epsilon() * (magnitude + std::abs(want));
        ASSERT_LE(std::abs(have - want), tol) << where << " f " << f << " row " << r << " column " << col;
      }
    }
  }
}

TEST(GpuFft, ChannelSumsMatchLongDoubleForEveryVersionAndLayout) {
  for (int version : {1, 2, 4}) {
    for (bool weights_layout : {false, true}) {
      check_spectral_gemm<float>(version, weights_layout, weights_layout, !weights_layout);
      check_spectral_gemm<double>(version, weights_layout, !weights_layout, weights_layout);
    }
  }
}

// ============================== the convolution ==============================

Conv2dDesc make(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K, std::int64_t R,
                std::int64_t S, std::int64_t pad, std::int64_t groups = 1) {
  Conv2dDesc d;
  d.N = N, d.C = C, d.H = H, d.W = W, d.K = K, d.R = R, d.S = S;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = pad;
  d.groups = groups;
  return d;
}

// The stride-1 cases of tests/cpu/conv (fft supports no other), and a few
// with more channels than a GEMM tile and larger tiles.
const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> all = [] {
    std::vector<ConvCase> c;
    // The "parallel_" cases are sized to cross the CPU's threading threshold;
    // the GPU's several-blocks cases are the ones below.
    for (const ConvCase& k : cpu::testing::conv_cases())
      if (k.desc.stride_h == 1 && k.desc.stride_w == 1 && k.name.rfind("parallel_", 0) != 0) c.push_back(k);
    c.push_back({"many_channels_5x5", make(1, 35, 5, 7, 33, 5, 5, 2)});
    c.push_back({"many_channels_groups_7x7", make(1, 12, 15, 13, 18, 7, 7, 3, 3)});
    c.push_back({"large_image_9x9", make(1, 2, 45, 38, 3, 9, 9, 4)});
    // 40 channels in and out on 32 x 16 tiles (288 frequencies): the
    // backward-weights product, 40 x 40 per frequency, takes v4's register
    // tiles (GpuConvFft.WideProductsRunTheRegisterTiles).
    c.push_back({"wide_products_7x7", make(1, 40, 24, 48, 40, 7, 7, 3)});
    return c;
  }();
  return all;
}

const conv::ConvAlgorithm& fft() { return kernels::fft_gpu_conv_algorithm(); }

template <typename T>
void expect_matches_reference(const ConvCase& c, int version) {
  ScopedKernelVersion select("conv2d_fft", version);
  expect_passes_match<T>(fft(), ConvAlgo::fft, c.desc, c.name + " v" + std::to_string(version));
}

class FftCase : public ::testing::TestWithParam<std::tuple<std::size_t, int>> {};

TEST_P(FftCase, EveryPassMatchesTheFloat64Reference) {
  const auto [index, version] = GetParam();
  ASSERT_TRUE(fft().supports(cases()[index].desc)) << fft().supports(cases()[index].desc).reason;
  expect_matches_reference<float>(cases()[index], version);
  expect_matches_reference<double>(cases()[index], version);
}

// Later versions against v1 in float32, where different rounding shows.
class FftVersusV1 : public ::testing::TestWithParam<std::tuple<std::size_t, int>> {};

TEST_P(FftVersusV1, AgreesWithVersion1) {
  const auto [index, version] = GetParam();
  expect_agrees_with_v1(fft(), ConvAlgo::fft, "conv2d_fft", version, cases()[index].desc,
                        cases()[index].name + " v" + std::to_string(version));
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<std::size_t, int>>& info) {
  return cases()[std::get<0>(info.param)].name + "_v" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Cases, FftCase,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()),
                                            ::testing::Values(1, 2, 4)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Cases, FftVersusV1,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()), ::testing::Values(2, 4)),
                         case_name);

#if !defined(__CUDACC__)  // thread orders are sim's to choose
TEST(GpuConvFft, BarriersHoldUnderEveryThreadOrder) {
  for (const char* order : {"reverse", "random:5"}) {
    sim::ScopedSchedule schedule(sim::Schedule::parse(order));
    for (int version : {1, 2, 4})
      for (const char* name : {"many_channels_groups_7x7", "dilation_2x3"})
        for (const ConvCase& c : cases())
          if (c.name == name) expect_matches_reference<float>(c, version);
  }
}
#endif

#if !defined(__CUDACC__)  // which kernels ran is sim's to tell
TEST(GpuConvFft, WideProductsRunTheRegisterTiles) {
  if (!convkit::sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  ScopedKernelVersion select("conv2d_fft", 4);
  const Conv2dDesc d = make(1, 40, 24, 48, 40, 7, 7, 3);  // wide_products_7x7
  const std::size_t bytes = fft().workspace_bytes(d, DType::float32, ConvPass::backward_weights);
  const Tensor workspace =
      empty(Shape{static_cast<std::int64_t>((bytes + 3) / 4)}, TensorOptions().device(kernel_device()));
  const Tensor x = garbage<float>(x_size(d)), dy = garbage<float>(y_size(d));
  const Tensor dw = garbage<float>(w_size(d)), db = garbage<float>(d.K);
  std::vector<std::string> kernels_ran;
  {
    convkit::sim::ScopedProfile profile;
    fft().backward_weights(d, DType::float32, x.raw_data(), dy.raw_data(), dw.raw_data(), db.raw_data(),
                           workspace.raw_data());
    for (const convkit::sim::KernelProfile& k : profile.take()) kernels_ran.push_back(k.kernel);
  }
  EXPECT_NE(std::find(kernels_ran.begin(), kernels_ran.end(), "spectral_gemm_tiled<float, 64, 4>"), kernels_ran.end())
      << ::testing::PrintToString(kernels_ran);
}
#endif

// A workspace_limit that holds one image at a time: several chunks, so the
// backward-weights spectra accumulate across them.
TEST(GpuConvFft, BatchesSplitIntoChunksGiveTheSameResult) {
  Conv2dDesc d = make(3, 3, 12, 10, 4, 5, 5, 2);
  const std::vector<ConvPass> passes = {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights};
  std::size_t whole_batch = std::numeric_limits<std::size_t>::max();
  for (ConvPass pass : passes) whole_batch = std::min(whole_batch, fft().workspace_bytes(d, DType::float64, pass));
  // Below what any pass needs for all three images at once: every pass runs
  // in chunks (of two images and then one).
  d.workspace_limit = whole_batch - 1;
  for (ConvPass pass : passes) EXPECT_LE(fft().workspace_bytes(d, DType::float64, pass), d.workspace_limit);
  for (int version : {1, 2, 4}) expect_matches_reference<double>(ConvCase{"chunked", d}, version);
}

TEST(GpuConvFft, WorkspaceLimitBelowOneImageNamesTheSizes) {
  Conv2dDesc d = make(1, 3, 12, 10, 4, 5, 5, 2);
  d.workspace_limit = 1000;
  try {
    fft().workspace_bytes(d, DType::float32, ConvPass::forward);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("workspace_limit"), std::string::npos) << e.what();
  }
}

TEST(GpuConvFft, UnsupportedDescriptorsSayWhy) {
  Conv2dDesc strided = make(1, 2, 9, 9, 2, 3, 3, 1);
  strided.stride_w = 2;
  const Support s = fft().supports(strided);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("stride 1 only"), std::string::npos) << s.reason;

  Conv2dDesc huge = make(1, 1, 300, 8, 1, 3, 1, 0);
  huge.dilation_h = 70;  // extent 141 > the largest tile, 128
  const Support h = fft().supports(huge);
  EXPECT_FALSE(h.ok);
  EXPECT_NE(h.reason.find("extent"), std::string::npos) << h.reason;

  EXPECT_THROW(fft().workspace_bytes(strided, DType::float32, ConvPass::forward), Error);
}

#if !defined(__CUDACC__)
// cuFFT (v3) exists only in the cuda build; on sim selecting it is an error
// that says what to do instead.
TEST(GpuConvFft, CufftVersionIsRefusedOnSimWithTheReason) {
  ScopedKernelVersion select("conv2d_fft", 3);
  const Support s = fft().supports(make(1, 2, 9, 9, 2, 3, 3, 1));
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("cuFFT"), std::string::npos) << s.reason;
  std::vector<float> tiles(8), spectra(2 * 2 * 3);
  try {
    kernels::launch_rfft2d(3, DType::float32, tiles.data(), 2, 4, 1, spectra.data(), nullptr);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda backend"), std::string::npos) << e.what();
  }
}
#endif

}  // namespace
}  // namespace convkit::gpu_testing
