#pragma once
// Geometry of the FFT convolution: every pass is reduced to one stride-1,
// grouped, multi-channel correlation,
//
//   out[n][o][p][q] = sum_{i in group of o, r < R, s < S}
//                       in[n][i][p - pad_top + r*dil_h][q - pad_left + s*dil_w] * tap(o, i, r, s)
//
// (taps outside `in` read zero), which is then cut into overlap-save tiles:
// a tile_h x tile_w window of the padded input yields (tile_h - extent_h + 1) x
// (tile_w - extent_w + 1) outputs free of wrap-around.
#include <cstdint>

#include "convkit/backend/conv_desc.h"

namespace convkit::cpu {

// Largest transform side; larger dilated filters are not supported by fft.
constexpr std::int64_t kMaxFftTile = 128;

struct CorrelationShape {
  std::int64_t N = 0, in_channels = 0, H = 0, W = 0;
  std::int64_t out_channels = 0, groups = 1;
  std::int64_t R = 0, S = 0, dil_h = 1, dil_w = 1;
  // May be negative (backward-data of a convolution padded by more than the
  // filter extent): then the first output reads from inside the input.
  std::int64_t pad_top = 0, pad_left = 0;
  std::int64_t P = 0, Q = 0;  // output size

  std::int64_t in_per_group() const { return in_channels / groups; }
  std::int64_t out_per_group() const { return out_channels / groups; }
  std::int64_t extent_h() const { return (R - 1) * dil_h + 1; }
  std::int64_t extent_w() const { return (S - 1) * dil_w + 1; }
};

// The forward convolution (stride 1): in = x, out = y, tap(k, c, r, s) = w[k][c][r][s].
// Backward-weights uses the same shape and tiling.
CorrelationShape forward_correlation(const Conv2dDesc& d);
// Backward-data as a correlation: in = dy (K channels, P x Q), out = dx (C
// channels, H x W), tap(c, k, r, s) = w[k][c][R-1-r][S-1-s] (flipped and
// transposed per group), padding extent - 1 - pad.
CorrelationShape backward_data_correlation(const Conv2dDesc& d);

struct FftTiling {
  std::int64_t tile_h = 0, tile_w = 0;  // transform size (powers of two)
  std::int64_t out_h = 0, out_w = 0;    // valid outputs per tile
  std::int64_t tiles_h = 0, tiles_w = 0;
  std::int64_t tiles_per_image() const { return tiles_h * tiles_w; }
  std::int64_t spectrum_cols() const { return tile_w / 2 + 1; }
  std::int64_t spectrum_size() const { return tile_h * spectrum_cols(); }
};

// The transform size with the lowest estimated arithmetic (see fft_tiling.cpp);
// requires extent_h, extent_w <= kMaxFftTile.
FftTiling choose_fft_tiling(const CorrelationShape& shape);

}  // namespace convkit::cpu
