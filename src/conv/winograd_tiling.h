#pragma once
// The output tiles of Winograd F(m x m, 3x3): an m x m block of outputs reads
// the a x a input patch (a = m + 2) that covers its 3x3 windows, and costs a*a
// products per channel pair. A pass's tiles cover its correlation's output
// plane (correlation.h), clipped where m does not divide it.
#include <cstdint>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/error.h"

namespace convkit::conv {

// Transform points per tile: a * a for F(m x m, 3x3), a = m + 2.
constexpr std::int64_t winograd_points(int m) { return (m + 2) * (m + 2); }

// Tiles of side m over one out_h x out_w plane.
struct WinogradTiling {
  int m = 2;
  std::int64_t tiles_h = 0, tiles_w = 0;
  WinogradTiling(int tile, std::int64_t out_h, std::int64_t out_w)
      : m(tile), tiles_h((out_h + tile - 1) / tile), tiles_w((out_w + tile - 1) / tile) {}
  std::int64_t tiles_per_image() const { return tiles_h * tiles_w; }
  // Transform points over the whole plane: the work the tile size trades.
  std::int64_t points() const { return tiles_per_image() * winograd_points(m); }
};

// The output tile side (2 or 4) with fewer transform points over an
// out_h x out_w plane (ties go to 2, which rounds less); `forced` != 0 wins.
inline int choose_winograd_tile(std::int64_t out_h, std::int64_t out_w, int forced = 0) {
  if (forced != 0) return forced;
  return WinogradTiling(4, out_h, out_w).points() < WinogradTiling(2, out_h, out_w).points() ? 4 : 2;
}

// The shapes Winograd F(2x2,3x3) and F(4x4,3x3) compute, shared by the cpu
// and GPU algorithms; `desc` is already validated.
inline Support winograd_shape_support(const Conv2dDesc& desc) {
  if (desc.R != 3 || desc.S != 3) {
    return Support::no(detail::concat("winograd F(2x2,3x3) and F(4x4,3x3) support 3x3 filters only (got ", desc.R,
                                      "x", desc.S, "); use im2col_gemm, fft or direct"));
  }
  if (desc.stride_h != 1 || desc.stride_w != 1) {
    return Support::no(detail::concat("winograd computes blocks of adjacent outputs, so it supports stride 1 only "
                                      "(got stride ",
                                      desc.stride_h, "x", desc.stride_w, "); use im2col_gemm or direct"));
  }
  if (desc.dilation_h != 1 || desc.dilation_w != 1) {
    return Support::no(detail::concat("winograd supports dilation 1 only (got dilation ", desc.dilation_h, "x",
                                      desc.dilation_w, "); use im2col_gemm, fft or direct"));
  }
  return Support::yes();
}

}  // namespace convkit::conv
