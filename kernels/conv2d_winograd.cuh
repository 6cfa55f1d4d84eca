#pragma once
// Launchers of the Winograd convolution kernels (kernels/conv2d_winograd.cu):
// the F(2x2,3x3) and F(4x4,3x3) transforms of filters, input tiles, output
// tiles and output-gradient tiles, and the per-point channel products.
// src/gpu/gpu_conv_winograd.cpp strings them into the three passes
// (docs/algorithms/winograd.md, "On the GPU").
//
// Transformed values are point-major, [xi][channel][tile] (xi < a*a, a = m+2),
// so each point's product is one matrix product over contiguous rows:
//   M[xi] (O x tiles) = U[xi] (O x I/g) * V[xi] (I/g x tiles), per group.
// Tiles are numbered across the batch image-major (n, tile row, tile column);
// a chunk is `count` consecutive tiles from t0, stored `pitch` apart per row.
#include <cstdint>
#include <optional>

#include "convkit/backend/precision.h"
#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"
#include "kernels/tensor_core_precision.cuh"

namespace convkit::CK_GPU_NS {

// The "conv2d_winograd" kernel family: registers it on first use and
// returns the version to run now.
int conv2d_winograd_version();

// One stride-1 3x3 correlation as the tile kernels see it (conv/correlation.h):
// `out_channels` planes of out_h x out_w from `in_channels` planes of in_h x in_w;
// output (p, q)'s window starts at input (p - off_h, q - off_w); zeros outside.
struct WinogradGeometry {
  int m;  // output tile side, 2 or 4
  int in_channels, out_channels, groups;
  int in_h, in_w, out_h, out_w, off_h, off_w;
  int tiles_h, tiles_w;
};

// The filter taps: U[xi][o][i] = (G g G^T)[xi] for o < O, i < I. Without
// `flip`, g = w[o][i]; with it (backward-data), g(r, s) =
// w[(o / Cg) * Kg + i][o mod Cg][2-r][2-s].
struct WinogradFilterSource {
  const void* w;
  int O, I;
  bool flip;
  int Cg, Kg;
};

// The transforms, by `version` of the family: v1 and v2 run the simple
// kernels (one thread per channel and tile, or per filter), v3 the same
// arithmetic with coalesced global accesses (kernels/conv2d_winograd.cu,
// "v3"), to the bit the same results. v3 keeps v1's input transform where
// the window starts off_w < 0 or > 2 columns left of the tile (padding above 2).
//
// U = transformed filters (O * I values per point).
void launch_winograd_filter_transform(int version, DType dtype, int m, const WinogradFilterSource& src, void* U);
// V[xi][c][j] = (B^T D B)[xi] of tile t0 + j of `in` (count tiles, row pitch `pitch`).
void launch_winograd_input_transform(int version, DType dtype, const WinogradGeometry& g, const void* in,
                                     std::int64_t t0, std::int64_t count, std::int64_t pitch, void* V);
// out = A^T M A of each tile, clipped to out_h x out_w, plus bias[o] when not null.
void launch_winograd_output_transform(int version, DType dtype, const WinogradGeometry& g, const void* M,
                                      const void* bias, std::int64_t t0, std::int64_t count, std::int64_t pitch,
                                      void* out);
// E[xi][o][j] = (A E A^T)[xi] of the m x m block of dy (out planes) at tile t0 + j.
void launch_winograd_output_gradient_transform(int version, DType dtype, const WinogradGeometry& g, const void* dy,
                                               std::int64_t t0, std::int64_t count, std::int64_t pitch, void* E);
// dw[o][i] = G^T W[.][o][i] G: points back to 3x3 taps (O * I filters).
void launch_winograd_weight_transform(int version, DType dtype, int m, int O, int I, const void* W, void* dw);

// M[xi] = U[xi] V[xi] per group (forward and backward-data), by `version`:
// v1 one thread per value of M; v2 and v3 the "gemm" family, batched over the points.
// Below the highest float32 `precision`, v2's and v3's float32 products run on the
// tensor-core GEMM ("gemm_tensor_core") in tf32, at high and medium alike
// (winograd_products_precision); v1 and float64 stay strict.
void launch_winograd_products(int version, DType dtype, Float32Precision precision, const WinogradGeometry& g,
                              const void* U, const void* V, std::int64_t count, std::int64_t pitch, void* M);
// W[xi] (+)= E[xi] V[xi]^T per group (backward-weights): O x I/g per point,
// on the tensor cores under the same rule.
void launch_winograd_weight_products(int version, DType dtype, Float32Precision precision, const WinogradGeometry& g,
                                     const void* E, const void* V, std::int64_t count, std::int64_t pitch,
                                     bool accumulate, void* W);

// The rounding v2's and v3's products take at `precision`, or nothing where they stay
// strict (highest, float64). Always tf32 when reduced, even at medium: the
// transforms amplify the operands' rounding (F(4x4)'s output transform sums
// points with weights up to 8), and on random layers bf16 products put
// F(4x4)'s outputs 1.4e-2 off (median, relative) where tf32 puts them
// 1.8e-3 off, below a bf16 direct convolution's 2.4e-3
// (docs/algorithms/winograd.md, "Reduced precision").
std::optional<TensorCorePrecision> winograd_products_precision(int version, DType dtype, Float32Precision precision);

}  // namespace convkit::CK_GPU_NS
