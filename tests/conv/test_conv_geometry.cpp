// The device-neutral convolution geometry of src/conv/ against the float64
// reference: each pass read as a correlation (with the flipped-filter mapping)
// must give the reference's values, the implicit-GEMM shapes must account for
// every multiply-add, and the FFT and Winograd tiles must cover the output.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "conv/correlation.h"
#include "conv/fft_tiling.h"
#include "conv/implicit_gemm.h"
#include "conv/winograd_tiling.h"
#include "cpu/conv/conv_reference.h"

namespace convkit::conv {
namespace {

using cpu::testing::conv_cases;
using cpu::testing::random_values;

// The correlation of correlation.h's comment, summed straight from its definition.
template <typename Tap>
std::vector<double> correlate(const CorrelationShape& s, const std::vector<double>& in, Tap tap) {
  std::vector<double> out(static_cast<std::size_t>(s.N * s.out_channels * s.P * s.Q), 0.0);
  const std::int64_t Ig = s.in_per_group(), Og = s.out_per_group();
  for (std::int64_t n = 0; n < s.N; ++n)
    for (std::int64_t o = 0; o < s.out_channels; ++o)
      for (std::int64_t p = 0; p < s.P; ++p)
        for (std::int64_t q = 0; q < s.Q; ++q) {
          double sum = 0;
          for (std::int64_t i = 0; i < Ig; ++i)
            for (std::int64_t r = 0; r < s.R; ++r)
              for (std::int64_t c = 0; c < s.S; ++c) {
                const std::int64_t h = p - s.pad_top + r * s.dil_h, w = q - s.pad_left + c * s.dil_w;
                if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
                const std::int64_t channel = (o / Og) * Ig + i;
                sum += in[static_cast<std::size_t>(((n * s.in_channels + channel) * s.H + h) * s.W + w)] *
                       tap(o, i, r, c);
              }
          out[static_cast<std::size_t>(((n * s.out_channels + o) * s.P + p) * s.Q + q)] = sum;
        }
  return out;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-12 * (1 + std::abs(want[i]))) << what << " element " << i;
}

// Stride-1 descriptors: the ones a correlation describes.
std::vector<cpu::testing::ConvCase> stride_one_cases() {
  std::vector<cpu::testing::ConvCase> out;
  for (const auto& c : conv_cases())
    if (c.desc.stride_h == 1 && c.desc.stride_w == 1) out.push_back(c);
  return out;
}

TEST(ConvGeometry, ForwardIsTheCorrelationWithTheFilters) {
  for (const auto& c : stride_one_cases()) {
    const Conv2dDesc& d = c.desc;
    std::mt19937_64 rng(1);
    const std::vector<double> x = random_values<double>(cpu::testing::x_size(d), rng);
    const std::vector<double> w = random_values<double>(cpu::testing::w_size(d), rng);
    const std::int64_t Cg = d.C_per_group();
    const auto y = correlate(forward_correlation(d), x, [&](std::int64_t k, std::int64_t ci, std::int64_t r,
                                                            std::int64_t s) {
      return w[static_cast<std::size_t>(((k * Cg + ci) * d.R + r) * d.S + s)];
    });
    expect_near(y, cpu::testing::reference_forward(d, x, w, {}).value, c.name);
  }
}

TEST(ConvGeometry, BackwardDataIsTheCorrelationWithTheFlippedFilters) {
  for (const auto& c : stride_one_cases()) {
    const Conv2dDesc& d = c.desc;
    std::mt19937_64 rng(2);
    const std::vector<double> dy = random_values<double>(cpu::testing::y_size(d), rng);
    const std::vector<double> w = random_values<double>(cpu::testing::w_size(d), rng);
    const CorrelationShape s = backward_data_correlation(d);
    EXPECT_EQ(s.in_channels, d.K);
    EXPECT_EQ(s.out_channels, d.C);
    EXPECT_EQ(s.P, d.H);
    EXPECT_EQ(s.Q, d.W);
    const auto dx = correlate(s, dy, [&](std::int64_t ci, std::int64_t k, std::int64_t r, std::int64_t sc) {
      return w[static_cast<std::size_t>(flipped_filter_index(d, ci, k, r, sc))];
    });
    expect_near(dx, cpu::testing::reference_backward_data(d, dy, w).value, c.name);
  }
  EXPECT_GT(stride_one_cases().size(), 3u);
}

TEST(ConvGeometry, FlippedFilterIndexIsAPermutation) {
  Conv2dDesc d;
  d.C = 4, d.K = 6, d.groups = 2, d.R = 2, d.S = 3;
  std::set<std::int64_t> seen;
  for (std::int64_t c = 0; c < d.C; ++c)
    for (std::int64_t k = 0; k < d.K_per_group(); ++k)
      for (std::int64_t r = 0; r < d.R; ++r)
        for (std::int64_t s = 0; s < d.S; ++s) seen.insert(flipped_filter_index(d, c, k, r, s));
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), d.K * d.C_per_group() * d.R * d.S);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), d.K * d.C_per_group() * d.R * d.S - 1);
  // Channel 3 is channel 1 of group 1; its k = 1 is filter 1*3 + 1 = 4; tap
  // (0, 0) reads the filter's last tap (1, 2).
  EXPECT_EQ(flipped_filter_index(d, 3, 1, 0, 0), ((4 * 2 + 1) * 2 + 1) * 3 + 2);
}

TEST(ConvGeometry, ImplicitGemmShapesCountEveryMultiplyAdd) {
  for (const auto& c : conv_cases()) {
    const GemmShape g(c.desc);
    for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
      const GemmDims m = g.dims(pass);
      EXPECT_DOUBLE_EQ(2.0 * static_cast<double>(m.M * m.N * m.K * g.groups * g.N), c.desc.flops())
          << c.name << " " << conv_pass_name(pass);
    }
    EXPECT_EQ(g.col_elems() == 0, g.image_is_col) << c.name;
    EXPECT_EQ(g.col_stride(), g.image_is_col ? g.image : g.col_elems()) << c.name;
  }
}

TEST(ConvGeometry, FftTilesCoverTheOutputWithoutWrapAround) {
  for (const auto& c : stride_one_cases()) {
    for (const CorrelationShape& s : {forward_correlation(c.desc), backward_data_correlation(c.desc)}) {
      if (s.extent_h() > kMaxFftTile || s.extent_w() > kMaxFftTile) continue;
      const FftTiling t = choose_fft_tiling(s);
      EXPECT_EQ(t.tile_h & (t.tile_h - 1), 0) << c.name;
      EXPECT_EQ(t.tile_w & (t.tile_w - 1), 0) << c.name;
      EXPECT_EQ(t.out_h, t.tile_h - s.extent_h() + 1) << c.name;
      EXPECT_EQ(t.out_w, t.tile_w - s.extent_w() + 1) << c.name;
      EXPECT_GE(t.out_h, 1) << c.name;
      EXPECT_GE(t.tiles_h * t.out_h, s.P) << c.name;
      EXPECT_LT((t.tiles_h - 1) * t.out_h, s.P) << c.name;
      EXPECT_GE(t.tiles_w * t.out_w, s.Q) << c.name;
      EXPECT_LT((t.tiles_w - 1) * t.out_w, s.Q) << c.name;
    }
  }
}

TEST(ConvGeometry, WinogradPicksTheTileWithFewerPoints) {
  EXPECT_EQ(choose_winograd_tile(2, 2), 2);    // one F(2x2) tile: 16 points, against 36
  EXPECT_EQ(choose_winograd_tile(8, 8), 4);    // 16 x 16 = 256 points, against 4 x 36 = 144
  EXPECT_EQ(choose_winograd_tile(8, 8, 2), 2); // forced
  const WinogradTiling t(4, 9, 5);
  EXPECT_EQ(t.tiles_h, 3);
  EXPECT_EQ(t.tiles_w, 2);
  EXPECT_EQ(t.points(), 6 * winograd_points(4));
}

}  // namespace
}  // namespace convkit::conv
