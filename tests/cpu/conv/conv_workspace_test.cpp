// Workspace sizes, chunking under workspace_limit, supports() reasons, and the
// errors for bad calls.
#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "convkit/core/error.h"
#include "cpu/conv/conv_algorithm.h"
#include "cpu/conv/conv_reference.h"
#include "cpu/conv/conv_tolerance.h"

namespace convkit::cpu::testing {
namespace {

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

Conv2dDesc desc_3x3(std::int64_t N) {
  Conv2dDesc d;
  d.N = N, d.C = 3, d.H = 9, d.W = 10, d.K = 4, d.R = 3, d.S = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  return d;
}

Conv2dDesc desc_grouped_dilated(std::int64_t N) {
  Conv2dDesc d = desc_3x3(N);
  d.C = 4, d.K = 6, d.groups = 2, d.dilation_h = 2, d.pad_top = 2, d.pad_bottom = 0;
  return d;
}

Conv2dDesc desc_1x1(std::int64_t N) {
  Conv2dDesc d;
  d.N = N, d.C = 4, d.H = 6, d.W = 5, d.K = 2, d.groups = 2;
  return d;
}

struct WinogradRefusal {
  void (*change)(Conv2dDesc&);
  const char* reason;
};

std::vector<Conv2dDesc> chunking_descs() { return {desc_3x3(5), desc_grouped_dilated(4), desc_1x1(3)}; }

// The smallest workspace_limit for which `pass` still runs: the limit that
// forces one image per chunk (lane).
std::size_t minimal_limit(const ConvAlgorithm& algo, Conv2dDesc d, ConvPass pass) {
  std::size_t lo = 0, hi = d.workspace_limit;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    d.workspace_limit = mid;
    try {
      algo.workspace_bytes(d, DType::float64, pass);
      hi = mid;
    } catch (const Error&) {
      lo = mid + 1;
    }
  }
  return lo;
}

std::vector<double> doubled(std::vector<double> tol) {
  for (double& t : tol) t *= 2;
  return tol;
}

struct PassResults {
  std::vector<double> y, dx, dw;
};

// Runs each pass with its own workspace_limit.
PassResults run_with_limits(const ConvAlgorithm& algo, Conv2dDesc d, const std::size_t limits[3],
                            const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                            const std::vector<double>& dy) {
  PassResults r{std::vector<double>(static_cast<std::size_t>(y_size(d))),
                std::vector<double>(static_cast<std::size_t>(x_size(d))),
                std::vector<double>(static_cast<std::size_t>(w_size(d)))};
  const ConvPass passes[3] = {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights};
  for (int p = 0; p < 3; ++p) {
    d.workspace_limit = limits[p];
    const std::size_t bytes = algo.workspace_bytes(d, DType::float64, passes[p]);
    EXPECT_LE(bytes, limits[p]) << d;
    std::vector<std::byte> ws(bytes);
    if (p == 0) algo.forward(d, DType::float64, x.data(), w.data(), b.data(), r.y.data(), ws.data());
    if (p == 1) algo.backward_data(d, DType::float64, dy.data(), w.data(), r.dx.data(), ws.data());
    if (p == 2) algo.backward_weights(d, DType::float64, x.data(), dy.data(), r.dw.data(), nullptr, ws.data());
  }
  return r;
}

TEST(ConvWorkspace, OneImageChunksGiveTheSameResults) {
  for (const ConvAlgorithm* algo : conv_algorithms()) {
    for (const Conv2dDesc& d : chunking_descs()) {
      if (!algo->supports(d)) continue;
      std::mt19937_64 rng(3);
      const auto x = random_values<double>(x_size(d), rng), w = random_values<double>(w_size(d), rng),
                 b = random_values<double>(d.K, rng), dy = random_values<double>(y_size(d), rng);
      const std::size_t defaults[3] = {d.workspace_limit, d.workspace_limit, d.workspace_limit};
      const std::size_t tight[3] = {minimal_limit(*algo, d, ConvPass::forward),
                                    minimal_limit(*algo, d, ConvPass::backward_data),
                                    minimal_limit(*algo, d, ConvPass::backward_weights)};
      const PassResults whole = run_with_limits(*algo, d, defaults, x, w, b, dy);
      const PassResults chunked = run_with_limits(*algo, d, tight, x, w, b, dy);
      const Reference y_ref = reference_forward(d, x, w, b), dx_ref = reference_backward_data(d, dy, w),
                      dw_ref = reference_backward_weights(d, x, dy);
      if (algo->algo() == ConvAlgo::im2col_gemm) {
        // One GEMM per image and group whatever the lane count: forward and
        // backward-data run the very same operations, bit for bit.
        EXPECT_EQ(chunked.y, whole.y) << d;
        EXPECT_EQ(chunked.dx, whole.dx) << d;
      } else {
        // fft's per-frequency products have one column per tile of the chunk;
        // Eigen blocks them differently for other widths, so results agree up
        // to rounding (each within its tolerance of the reference, hence
        // within twice that of each other).
        EXPECT_TRUE(all_within(chunked.y, whole.y, doubled(tolerances<double>(algo->algo(), y_ref)))) << d;
        EXPECT_TRUE(all_within(chunked.dx, whole.dx, doubled(tolerances<double>(algo->algo(), dx_ref)))) << d;
      }
      // Backward-weights sums over images in a different grouping: equal up to rounding.
      EXPECT_TRUE(all_within(chunked.dw, whole.dw, doubled(tolerances<double>(algo->algo(), dw_ref))))
          << conv_algo_name(algo->algo()) << " " << d;
      if (algo->algo() != ConvAlgo::direct) {
        // With N >= 2 the default limit really runs several images (winograd:
        // tiles) per chunk.
        EXPECT_GT(algo->workspace_bytes(d, DType::float64, ConvPass::backward_weights),
                  tight[2]) << conv_algo_name(algo->algo()) << " " << d;
      }
    }
  }
}

TEST(ConvWorkspace, LimitTooSmallForOneImageIsAClearError) {
  for (const ConvAlgorithm* algo : conv_algorithms()) {
    for (Conv2dDesc d : chunking_descs()) {
      if (!algo->supports(d)) continue;
      const std::size_t tight = minimal_limit(*algo, d, ConvPass::forward);
      if (tight == 0) continue;  // needs no workspace (direct, 1x1 im2col_gemm)
      d.workspace_limit = tight - 1;
      try {
        algo->workspace_bytes(d, DType::float64, ConvPass::forward);
        ADD_FAILURE() << "no error for " << d;
      } catch (const Error& e) {
        const std::string msg = e.what();
        // winograd's unit of work is a 2x2 output tile, the others' an image.
        const std::string unit = algo->algo() == ConvAlgo::winograd ? "one tile" : "one image";
        EXPECT_TRUE(contains(msg, unit + " needs " + std::to_string(tight) + " bytes")) << msg;
        EXPECT_TRUE(contains(msg, "workspace_limit is " + std::to_string(tight - 1))) << msg;
        EXPECT_TRUE(contains(msg, conv_algo_name(algo->algo()))) << msg;
        EXPECT_TRUE(contains(msg, d.str())) << msg;
      }
      std::vector<double> buf(4096);
      EXPECT_THROW(algo->forward(d, DType::float64, buf.data(), buf.data(), nullptr, buf.data(), buf.data()), Error);
    }
  }
}

// workspace_bytes is an upper bound on what a pass touches: the bytes after it
// (and the caller's misaligned base) are left alone.
TEST(ConvWorkspace, PassesStayInsideTheirWorkspace) {
  constexpr std::size_t kGuard = 256;
  constexpr auto kPattern = std::byte{0xA5};
  for (const ConvAlgorithm* algo : conv_algorithms()) {
    for (const ConvCase& c : conv_cases()) {
      const Conv2dDesc& d = c.desc;
      if (!algo->supports(d)) continue;
      std::mt19937_64 rng(5);
      const auto x = cast_to<float>(random_values<float>(x_size(d), rng));
      const auto w = cast_to<float>(random_values<float>(w_size(d), rng));
      const auto dy = cast_to<float>(random_values<float>(y_size(d), rng));
      std::vector<float> y(static_cast<std::size_t>(y_size(d))), dx(x.size()), dw(w.size());
      for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
        const std::size_t bytes = algo->workspace_bytes(d, DType::float32, pass);
        EXPECT_LE(bytes, algo->workspace_bytes(d, DType::float32)) << c.name;
        std::vector<std::byte> buffer(1 + bytes + kGuard, kPattern);
        std::byte* ws = buffer.data() + 1;  // deliberately misaligned
        if (pass == ConvPass::forward) algo->forward(d, DType::float32, x.data(), w.data(), nullptr, y.data(), ws);
        if (pass == ConvPass::backward_data) algo->backward_data(d, DType::float32, dy.data(), w.data(), dx.data(), ws);
        if (pass == ConvPass::backward_weights)
          algo->backward_weights(d, DType::float32, x.data(), dy.data(), dw.data(), nullptr, ws);
        bool intact = buffer[0] == kPattern;
        for (std::size_t i = 1 + bytes; i < buffer.size(); ++i) intact = intact && buffer[i] == kPattern;
        EXPECT_TRUE(intact) << conv_algo_name(algo->algo()) << " " << conv_pass_name(pass) << " " << c.name;
      }
    }
  }
}

TEST(ConvWorkspace, DirectNeedsNone) {
  for (const ConvCase& c : conv_cases())
    EXPECT_EQ(conv_algorithm(ConvAlgo::direct).workspace_bytes(c.desc, DType::float32), 0u) << c.name;
}

TEST(ConvSupport, FftRefusesStridesAndSaysWhy) {
  Conv2dDesc d = desc_3x3(2);
  d.stride_h = 2;
  const Support s = conv_algorithm(ConvAlgo::fft).supports(d);
  EXPECT_FALSE(s.ok);
  EXPECT_TRUE(contains(s.reason, "stride 1 only (got stride 2x1)")) << s.reason;
  EXPECT_TRUE(contains(s.reason, "im2col_gemm")) << s.reason;
  EXPECT_TRUE(conv_algorithm(ConvAlgo::direct).supports(d).ok);
  EXPECT_TRUE(conv_algorithm(ConvAlgo::im2col_gemm).supports(d).ok);
  std::vector<float> buf(1024);
  try {
    conv_algorithm(ConvAlgo::fft).forward(d, DType::float32, buf.data(), buf.data(), nullptr, buf.data(), buf.data());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "conv2d forward (cpu, fft)")) << e.what();
    EXPECT_TRUE(contains(e.what(), "stride 1 only")) << e.what();
    EXPECT_TRUE(contains(e.what(), d.str())) << e.what();
  }
}

TEST(ConvSupport, FftRefusesFiltersWiderThanItsLargestTile) {
  Conv2dDesc d;
  d.H = 8, d.W = 300, d.S = 3, d.dilation_w = 100;  // extent 201
  const Support s = conv_algorithm(ConvAlgo::fft).supports(d);
  EXPECT_FALSE(s.ok);
  EXPECT_TRUE(contains(s.reason, "1x201")) << s.reason;
}

TEST(ConvSupport, WinogradRefusesWhatF2x2By3x3CannotComputeAndSaysWhy) {
  const WinogradRefusal refusals[] = {
      {[](Conv2dDesc& d) { d.R = 5; }, "3x3 filters only (got 5x3)"},
      {[](Conv2dDesc& d) { d.S = 1; }, "3x3 filters only (got 3x1)"},
      {[](Conv2dDesc& d) { d.stride_w = 2; }, "stride 1 only (got stride 1x2)"},
      {[](Conv2dDesc& d) { d.dilation_h = 2; }, "dilation 1 only (got dilation 2x1)"},
  };
  for (const WinogradRefusal& r : refusals) {
    Conv2dDesc d = desc_3x3(2);
    r.change(d);
    const Support s = conv_algorithm(ConvAlgo::winograd).supports(d);
    EXPECT_FALSE(s.ok) << d;
    EXPECT_TRUE(contains(s.reason, r.reason)) << s.reason;
    EXPECT_TRUE(contains(s.reason, "im2col_gemm")) << s.reason;
    std::vector<float> buf(2048);
    try {
      conv_algorithm(ConvAlgo::winograd).backward_weights(d, DType::float32, buf.data(), buf.data(), buf.data(),
                                                          nullptr, buf.data());
      ADD_FAILURE() << "no error for " << d;
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "conv2d backward_weights (cpu, winograd)")) << e.what();
      EXPECT_TRUE(contains(e.what(), r.reason)) << e.what();
    }
  }
  EXPECT_TRUE(conv_algorithm(ConvAlgo::winograd).supports(desc_3x3(2)).ok);
}

TEST(ConvSupport, InvalidDescriptorIsUnsupportedWithTheValidationMessage) {
  Conv2dDesc d = desc_3x3(1);
  d.groups = 2;  // C = 3
  for (const ConvAlgorithm* algo : conv_algorithms()) {
    const Support s = algo->supports(d);
    EXPECT_FALSE(s.ok);
    EXPECT_TRUE(contains(s.reason, "input channels C (3) is not divisible by groups (2)")) << s.reason;
    std::vector<float> buf(1024);
    try {
      algo->backward_data(d, DType::float32, buf.data(), buf.data(), buf.data(), buf.data());
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "conv2d backward_data (cpu, " + std::string(conv_algo_name(algo->algo())))) << e.what();
      EXPECT_TRUE(contains(e.what(), "not divisible by groups")) << e.what();
    }
  }
}

TEST(ConvSupport, RegistryListsTheImplementedAlgorithms) {
  const auto all = conv_algorithms();
  // Table order, one per cpu line of the table (convkit/conv/algorithms.h).
  std::vector<ConvAlgo> want;
  for (const ConvAlgoInfo& info : kConvAlgorithms)
    if (info.cpu) want.push_back(info.algo);
  ASSERT_EQ(all.size(), want.size());
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i]->algo(), want[i]);
  for (const ConvAlgorithm* a : all) EXPECT_EQ(&conv_algorithm(a->algo()), a);
  try {
    conv_algorithm(ConvAlgo::automatic);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "choose_conv_algorithm_heuristic")) << e.what();
  }
}

TEST(ConvSupport, BadCallsNameTheProblem) {
  const Conv2dDesc d = desc_3x3(1);
  std::vector<std::int64_t> ints(2048);
  std::vector<float> buf(2048);
  const ConvAlgorithm& algo = conv_algorithm(ConvAlgo::im2col_gemm);
  try {
    algo.forward(d, DType::int64, ints.data(), ints.data(), nullptr, ints.data(), ints.data());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "dtype int64 is not supported")) << e.what();
  }
  try {
    algo.forward(d, DType::float32, buf.data(), nullptr, nullptr, buf.data(), buf.data());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "buffer 'w' is null")) << e.what();
  }
  try {
    algo.forward(d, DType::float32, buf.data(), buf.data(), nullptr, buf.data(), nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "workspace is null")) << e.what();
    EXPECT_TRUE(contains(e.what(), d.str())) << e.what();
  }
  // direct needs no workspace, so nullptr is fine.
  EXPECT_NO_THROW(conv_algorithm(ConvAlgo::direct)
                      .forward(d, DType::float32, buf.data(), buf.data(), nullptr, buf.data(), nullptr));
}

}  // namespace
}  // namespace convkit::cpu::testing

namespace convkit::cpu::testing {
namespace {

// Callers may already be inside an OpenMP parallel region (say, one
// convolution per thread); every algorithm must then run correctly on that
// thread with its own buffers.
TEST(ConvThreads, RunInsideAnOuterParallelRegion) {
  const Conv2dDesc d = desc_3x3(3);
  std::mt19937_64 rng(11);
  const auto x = random_values<double>(x_size(d), rng), w = random_values<double>(w_size(d), rng),
             dy = random_values<double>(y_size(d), rng);
  for (const ConvAlgorithm* algo : conv_algorithms()) {
    const std::size_t bytes = algo->workspace_bytes(d, DType::float64);
    std::vector<double> y_alone(static_cast<std::size_t>(y_size(d))), dx_alone(x.size()), dw_alone(w.size());
    std::vector<std::byte> ws(bytes);
    algo->forward(d, DType::float64, x.data(), w.data(), nullptr, y_alone.data(), ws.data());
    algo->backward_data(d, DType::float64, dy.data(), w.data(), dx_alone.data(), ws.data());
    algo->backward_weights(d, DType::float64, x.data(), dy.data(), dw_alone.data(), nullptr, ws.data());
    constexpr int kThreads = 4;  // more threads than the 3 lanes of this descriptor
    std::vector<std::vector<double>> y(kThreads, y_alone), dx(kThreads, dx_alone), dw(kThreads, dw_alone);
#pragma omp parallel for num_threads(kThreads)
    for (int t = 0; t < kThreads; ++t) {
      std::vector<std::byte> own(bytes);
      std::fill(y[t].begin(), y[t].end(), 0.0);
      std::fill(dx[t].begin(), dx[t].end(), 0.0);
      std::fill(dw[t].begin(), dw[t].end(), 0.0);
      algo->forward(d, DType::float64, x.data(), w.data(), nullptr, y[t].data(), own.data());
      algo->backward_data(d, DType::float64, dy.data(), w.data(), dx[t].data(), own.data());
      algo->backward_weights(d, DType::float64, x.data(), dy.data(), dw[t].data(), nullptr, own.data());
    }
    const Reference y_ref = reference_forward(d, x, w, {}), dx_ref = reference_backward_data(d, dy, w),
                    dw_ref = reference_backward_weights(d, x, dy);
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_TRUE(all_within(y[t], y_alone, doubled(tolerances<double>(algo->algo(), y_ref)))) << conv_algo_name(algo->algo());
      EXPECT_TRUE(all_within(dx[t], dx_alone, doubled(tolerances<double>(algo->algo(), dx_ref)))) << conv_algo_name(algo->algo());
      EXPECT_TRUE(all_within(dw[t], dw_alone, doubled(tolerances<double>(algo->algo(), dw_ref)))) << conv_algo_name(algo->algo());
    }
  }
}

}  // namespace
}  // namespace convkit::cpu::testing
