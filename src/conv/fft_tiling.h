#pragma once
// The overlap-save tiles of the FFT convolution (cpu and gpu): a pass's
// correlation (correlation.h) is cut into tiles, and a tile_h x tile_w window
// of the padded input yields (tile_h - extent_h + 1) x (tile_w - extent_w + 1)
// outputs free of wrap-around.
#include <cstdint>

#include "conv/correlation.h"

namespace convkit::conv {

// Largest transform side; larger dilated filters are not supported by fft.
constexpr std::int64_t kMaxFftTile = 128;

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

}  // namespace convkit::conv
