// Choosing the FFT tile size.
#include "conv/fft_tiling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "convkit/core/error.h"

namespace convkit::conv {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Smallest power of two >= n.
std::int64_t power_of_two_at_least(std::int64_t n) {
  std::int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

FftTiling make_tiling(const CorrelationShape& s, std::int64_t tile_h, std::int64_t tile_w) {
  FftTiling t;
  t.tile_h = tile_h;
  t.tile_w = tile_w;
  t.out_h = tile_h - s.extent_h() + 1;
  t.out_w = tile_w - s.extent_w() + 1;
  t.tiles_h = ceil_div(s.P, t.out_h);
  t.tiles_w = ceil_div(s.Q, t.out_w);
  return t;
}

}  // namespace

// Cost model, in real flops:
//   per tile: pointwise products  8 * spectrum_size * out_channels * in_per_group
//             transforms          fft(T) * (in_channels + out_channels)
//   once:     filter transforms   fft(T) * out_channels * in_per_group
// with fft(T) = 2.5 * tile_h * tile_w * log2(tile_h * tile_w), half the
// classic 5 n log2 n of a complex FFT since the input is real. Small tiles
// waste work on the overlap (extent - 1 rows and columns per tile), large ones
// on transforms and zero padding past the image; the model weighs the two.
FftTiling choose_fft_tiling(const CorrelationShape& s) {
  CK_CHECK(s.extent_h() <= kMaxFftTile && s.extent_w() <= kMaxFftTile,
           "fft conv: dilated filter extent ", s.extent_h(), "x", s.extent_w(), " exceeds the largest tile ",
           kMaxFftTile);
  // A tile never needs to be larger than the whole padded output region.
  const std::int64_t max_h = std::min(kMaxFftTile, power_of_two_at_least(s.P + s.extent_h() - 1));
  const std::int64_t max_w = std::min(kMaxFftTile, std::max<std::int64_t>(2, power_of_two_at_least(s.Q + s.extent_w() - 1)));
  FftTiling best;
  double best_cost = std::numeric_limits<double>::infinity();
  for (std::int64_t th = power_of_two_at_least(s.extent_h()); th <= max_h; th *= 2) {
    for (std::int64_t tw = std::max<std::int64_t>(2, power_of_two_at_least(s.extent_w())); tw <= max_w; tw *= 2) {
      const FftTiling t = make_tiling(s, th, tw);
      const double fft = 2.5 * static_cast<double>(th * tw) * std::log2(static_cast<double>(th * tw));
      const double per_tile = 8.0 * static_cast<double>(t.spectrum_size()) * static_cast<double>(s.out_channels * s.in_per_group()) +
                              fft * static_cast<double>(s.in_channels + s.out_channels);
      const double cost = static_cast<double>(s.N * t.tiles_per_image()) * per_tile +
                          fft * static_cast<double>(s.out_channels * s.in_per_group());
      if (cost < best_cost) {
        best_cost = cost;
        best = t;
      }
    }
  }
  return best;
}

}  // namespace convkit::conv
