// Winograd convolution kernels, F(2x2,3x3) and F(4x4,3x3) (the maths is in
// docs/algorithms/winograd.md; the cpu twin is src/cpu/conv/conv_winograd.cpp).
//
// A pass is a sequence of one-purpose kernels per chunk of tiles:
//   filters   U = G g G^T per (out, in) channel pair, once per pass
//   inputs    V = B^T D B per (channel, tile): D the a x a input patch, zero outside
//   products  M[xi] = U[xi] V[xi] per point xi < a*a and group (a = m + 2)
//   outputs   Y = A^T M A per (channel, tile), clipped to the plane, plus bias
// Backward-weights transforms dy blocks (A E A^T) instead of outputs, sums
// W[xi] += E[xi] V[xi]^T over chunks, and takes W back to 3x3 (G^T W G).
// Every transform thread handles one (channel, tile); consecutive threads take
// consecutive tiles, so the point-major stores [xi][channel][tile] coalesce
// (the plane-side accesses coalesce from v3 on).
// The transforms multiply by the matrices B^T, G and A^T with plain loops
// (the simple form; the 1-D transforms of src/cpu/conv/winograd_transforms.h
// are the same matrices written out).
//
// Floors, per tile and channel pair (I inputs, O outputs, g groups, a*a points):
//   products   a*a * (I/g) multiply-adds per output channel and tile: 16 for
//              F(2x2), 36 for F(4x4), against 9*m*m (36, 144) for direct
//   transforms a*a values written per input channel and tile (inputs) and
//              read per output channel and tile (outputs): the stage traffic,
//              a*a/(m*m) (4x for F(2x2), 2.25x for F(4x4)) the size of the
//              activations they replace, read and written once each
//
// Versions ("conv2d_winograd"):
//   v1  the products with one thread per value of M (or W), a plain dot
//       product over channels (or tiles) from global memory.
//   v2  the products as the "gemm" family's batched tiled GEMM, one launch per
//       group over the a*a points: each value staged in shared memory serves
//       a whole tile of products. The transforms are v1's. Below the highest
//       float32 precision (allow_tf32) the products run on the tensor-core
//       GEMM in tf32 (winograd_products_precision), as cuDNN's
//       WINOGRAD_NONFUSED runs on tensor cores under its tensor-op math:
//       the products are where the time goes (F(4x4): 36 I O multiply-adds
//       per tile, I and O the group's channels, against the transforms'
//       36 (I + O) values moved), and the tensor cores multiply tf32 several
//       times faster than the FP32 units. v1 stays strict, the twin the
//       others are checked against.
//   v3  v2 with the transforms' global accesses coalesced ("v3" below): on
//       the sim model (cifar10-cnn conv2, batch 2) v1's input transform
//       touches 15.3 sectors per 32-lane request where 4 would do, its
//       output stores 15.9, the filter taps 32. The arithmetic is v1's,
//       in the same order, so v3's results are v2's to the bit.
#include <cstdint>
#include <string>
#include <type_traits>

#include "convkit/backend/kernel_versions.h"
#include "kernels/conv2d_winograd.cuh"
#include "kernels/device_math.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/gemm.cuh"
#include "kernels/gemm_tensor_core.cuh"
#include "kernels/tensor_view.cuh"
#include "kernels/vector_access.cuh"
#include "kernels/warp_reduce.cuh"

namespace convkit::CK_GPU_NS {

namespace {

using std::int64_t;

constexpr int kVersions = 3;
// Every launch has blocks of kThreads (grid_launch): whole warps, as v3's
// shuffles need, and the block size the staged kernels' shared arrays assume.
constexpr unsigned kThreads = 256;
static_assert(kThreads % kWarpSize == 0);

// B^T (a x a), G (a x 3) and A^T (m x a) of F(m x m, 3x3), as in
// src/cpu/conv/winograd_transforms.h. Built in registers per thread: loops
// over them unroll and the constants fold.
template <int M, typename T>
struct Matrices;

template <typename T>
struct Matrices<2, T> {
  T bt[4][4], g[4][3], at[2][4];
  __device__ Matrices()
      : bt{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
        g{{1, 0, 0}, {T(0.5), T(0.5), T(0.5)}, {T(0.5), T(-0.5), T(0.5)}, {0, 0, 1}},
        at{{1, 1, 1, 0}, {0, 1, -1, -1}} {}
};

template <typename T>
struct Matrices<4, T> {
  T bt[6][6], g[6][3], at[4][6];
  __device__ Matrices()
      : bt{{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
           {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}},
        g{{T(1) / T(4), 0, 0},
          {-T(1) / T(6), -T(1) / T(6), -T(1) / T(6)},
          {-T(1) / T(6), T(1) / T(6), -T(1) / T(6)},
          {T(1) / T(24), T(1) / T(12), T(1) / T(6)},
          {T(1) / T(24), -T(1) / T(12), T(1) / T(6)},
          {0, 0, 1}},
        at{{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}} {}
};

template <typename T>
struct FilterArgs {
  const T* w;
  int O, I;
  bool flip;
  int Cg, Kg;
};

// U = G g G^T of one 3x3 filter, stored point-major at `out` (points
// `point_stride` apart), in the order every version uses.
template <int M, typename T>
__device__ __forceinline__ void store_filter_transform(const Matrices<M, T>& mat, const T (&g)[3][3],
                                                       int64_t point_stride, T* out) {
  constexpr int A = M + 2;
  T gg[A][3];  // G g
  for (int x = 0; x < A; ++x)
    for (int s = 0; s < 3; ++s) gg[x][s] = mat.g[x][0] * g[0][s] + mat.g[x][1] * g[1][s] + mat.g[x][2] * g[2][s];
  for (int x = 0; x < A; ++x)
    for (int y = 0; y < A; ++y)
      out[(x * A + y) * point_stride] = gg[x][0] * mat.g[y][0] + gg[x][1] * mat.g[y][1] + gg[x][2] * mat.g[y][2];
}

// Which filter of w entry e = o * I + i of U transforms: w[o][i], or with
// `flip` (backward-data) w[(o / Cg) * Kg + i][o mod Cg], its taps reversed.
template <typename T>
__device__ __forceinline__ int64_t source_filter(const FilterArgs<T>& f, int64_t e) {
  if (!f.flip) return e;
  const int o = static_cast<int>(e / f.I), i = static_cast<int>(e % f.I);
  return (static_cast<int64_t>(o / f.Cg) * f.Kg + i) * f.Cg + o % f.Cg;
}

// One thread per (o, i): U[xi][o][i] = (G g G^T)[xi].
template <int M, typename T>
__global__ void filter_transform(FilterArgs<T> f, T* U) {
  const Matrices<M, T> mat;
  const int64_t total = static_cast<int64_t>(f.O) * f.I;
  for (int64_t e = grid_thread(); e < total; e += grid_threads()) {
    const T* taps = f.w + source_filter(f, e) * 9;
    T g[3][3];
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s) g[r][s] = f.flip ? taps[(2 - r) * 3 + (2 - s)] : taps[r * 3 + s];
    store_filter_transform(mat, g, total, U + e);
  }
}

// Where tile t (numbered across the batch) sits: image n, first output (p, q).
struct TilePlace {
  int64_t n;
  int p, q;
};
__device__ __forceinline__ TilePlace place(const WinogradGeometry& g, int64_t t) {
  const int64_t per_image = static_cast<int64_t>(g.tiles_h) * g.tiles_w;
  const int rest = static_cast<int>(t % per_image);
  return {t / per_image, (rest / g.tiles_w) * g.m, (rest % g.tiles_w) * g.m};
}

// V = B^T D B of one a x a patch, in the order every version uses (so that
// v3's results are v1's to the bit), stored point-major at `out` with points
// `point_stride` apart.
template <int M, typename T>
__device__ __forceinline__ void store_input_transform(const Matrices<M, T>& mat, const T (&d)[M + 2][M + 2],
                                                      int64_t point_stride, T* out) {
  constexpr int A = M + 2;
  T bd[A][A];  // B^T D
  for (int x = 0; x < A; ++x) {
    for (int y = 0; y < A; ++y) {
      T sum = 0;
      for (int k = 0; k < A; ++k) sum += mat.bt[x][k] * d[k][y];
      bd[x][y] = sum;
    }
  }
  for (int x = 0; x < A; ++x) {
    for (int y = 0; y < A; ++y) {
      T sum = 0;
      for (int k = 0; k < A; ++k) sum += bd[x][k] * mat.bt[y][k];
      out[(x * A + y) * point_stride] = sum;
    }
  }
}

// One thread per (channel, tile): V[xi][c][j] = (B^T D B)[xi].
template <int M, typename T>
__global__ void input_transform(WinogradGeometry g, const T* in, int64_t t0, int64_t count, int64_t pitch, T* V) {
  constexpr int A = M + 2;
  const Matrices<M, T> mat;
  const int64_t total = g.in_channels * count;
  for (int64_t e = grid_thread(); e < total; e += grid_threads()) {
    const int c = static_cast<int>(e / count);
    const int64_t j = e % count;
    const TilePlace at = place(g, t0 + j);
    const T* plane = in + (at.n * g.in_channels + c) * g.in_h * g.in_w;
    T d[A][A];
    for (int x = 0; x < A; ++x) {
      const int h = at.p - g.off_h + x;
      for (int y = 0; y < A; ++y) {
        const int w = at.q - g.off_w + y;
        d[x][y] = (h >= 0 && h < g.in_h && w >= 0 && w < g.in_w) ? plane[static_cast<int64_t>(h) * g.in_w + w] : T(0);
      }
    }
    store_input_transform(mat, d, g.in_channels * pitch, V + static_cast<int64_t>(c) * pitch + j);
  }
}

// A^T M of one tile's a*a points, read point-major from `points` (points
// `point_stride` apart), in the order every version uses.
template <int M, typename T>
__device__ __forceinline__ void load_output_points(const Matrices<M, T>& mat, const T* points, int64_t point_stride,
                                                   T (&am)[M][M + 2]) {
  constexpr int A = M + 2;
  for (int x = 0; x < M; ++x)
    for (int y = 0; y < A; ++y) am[x][y] = 0;
  for (int k = 0; k < A; ++k) {
    for (int y = 0; y < A; ++y) {
      const T v = points[(k * A + y) * point_stride];
      for (int x = 0; x < M; ++x) am[x][y] += mat.at[x][k] * v;
    }
  }
}

// Row x of the tile's outputs: (A^T M A)[x][y] + b for y < m.
template <int M, typename T>
__device__ __forceinline__ void output_row(const Matrices<M, T>& mat, const T (&am)[M][M + 2], int x, T b,
                                           T (&row)[M]) {
  for (int y = 0; y < M; ++y) {
    T sum = 0;
    for (int k = 0; k < M + 2; ++k) sum += am[x][k] * mat.at[y][k];
    row[y] = sum + b;
  }
}

// v3's row accesses, defined with v3 below.
template <int M, typename T>
__device__ __forceinline__ void load_row_block(const T* row, int q, int width, T (&v)[M]);
template <int M, typename T>
__device__ __forceinline__ void store_row_block(T* row, int q, int width, const T (&v)[M]);

// The output transform's grid loop, one thread per (channel, tile): the
// m x m outputs A^T M A, clipped, plus bias; each row stored one value at a
// time (v1) or by store_row_block (kRowBlocks, v3).
template <int M, typename T, bool kRowBlocks>
__device__ __forceinline__ void output_transform_tiles(const WinogradGeometry& g, const T* Mx, const T* bias,
                                                       int64_t t0, int64_t count, int64_t pitch, T* out) {
  const Matrices<M, T> mat;
  const int64_t total = g.out_channels * count;
  for (int64_t e = grid_thread(); e < total; e += grid_threads()) {
    const int o = static_cast<int>(e / count);
    const int64_t j = e % count;
    T am[M][M + 2];  // A^T M
    load_output_points(mat, Mx + static_cast<int64_t>(o) * pitch + j, g.out_channels * pitch, am);
    const TilePlace at = place(g, t0 + j);
    T* plane = out + (at.n * g.out_channels + o) * g.out_h * g.out_w;
    const T b = bias != nullptr ? bias[o] : T(0);
    for (int x = 0; x < M && at.p + x < g.out_h; ++x) {
      T row[M];
      output_row(mat, am, x, b, row);
      T* line = plane + static_cast<int64_t>(at.p + x) * g.out_w;
      if constexpr (kRowBlocks) {
        store_row_block(line, at.q, g.out_w, row);
      } else {
        for (int y = 0; y < M && at.q + y < g.out_w; ++y) line[at.q + y] = row[y];
      }
    }
  }
}

// v1's output transform.
template <int M, typename T>
__global__ void output_transform(WinogradGeometry g, const T* Mx, const T* bias, int64_t t0, int64_t count,
                                 int64_t pitch, T* out) {
  output_transform_tiles<M, T, false>(g, Mx, bias, t0, count, pitch, out);
}

// E = A E A^T of one m x m block of dy, stored point-major at `out`, in the
// order every version uses.
template <int M, typename T>
__device__ __forceinline__ void store_output_gradient_transform(const Matrices<M, T>& mat, const T (&blk)[M][M],
                                                                int64_t point_stride, T* out) {
  constexpr int A = M + 2;
  T ae[A][M];  // A E
  for (int x = 0; x < A; ++x) {
    for (int y = 0; y < M; ++y) {
      T sum = 0;
      for (int k = 0; k < M; ++k) sum += mat.at[k][x] * blk[k][y];
      ae[x][y] = sum;
    }
  }
  for (int x = 0; x < A; ++x) {
    for (int y = 0; y < A; ++y) {
      T sum = 0;
      for (int k = 0; k < M; ++k) sum += ae[x][k] * mat.at[k][y];
      out[(x * A + y) * point_stride] = sum;
    }
  }
}

// The output-gradient transform's grid loop, one thread per (channel,
// tile): E[xi][o][j] = (A E A^T)[xi] of the m x m block of dy at the tile,
// zero past the plane; each row loaded one value at a time (v1) or by
// load_row_block (kRowBlocks, v3).
template <int M, typename T, bool kRowBlocks>
__device__ __forceinline__ void output_gradient_transform_tiles(const WinogradGeometry& g, const T* dy, int64_t t0,
                                                                int64_t count, int64_t pitch, T* E) {
  const Matrices<M, T> mat;
  const int64_t total = g.out_channels * count;
  for (int64_t e = grid_thread(); e < total; e += grid_threads()) {
    const int o = static_cast<int>(e / count);
    const int64_t j = e % count;
    const TilePlace at = place(g, t0 + j);
    const T* plane = dy + (at.n * g.out_channels + o) * g.out_h * g.out_w;
    T blk[M][M];
    for (int x = 0; x < M; ++x) {
      if (at.p + x >= g.out_h) {
        for (int y = 0; y < M; ++y) blk[x][y] = T(0);
        continue;
      }
      const T* line = plane + static_cast<int64_t>(at.p + x) * g.out_w;
      if constexpr (kRowBlocks) {
        load_row_block(line, at.q, g.out_w, blk[x]);
      } else {
        for (int y = 0; y < M; ++y) blk[x][y] = at.q + y < g.out_w ? line[at.q + y] : T(0);
      }
    }
    store_output_gradient_transform(mat, blk, g.out_channels * pitch, E + static_cast<int64_t>(o) * pitch + j);
  }
}

// v1's output-gradient transform.
template <int M, typename T>
__global__ void output_gradient_transform(WinogradGeometry g, const T* dy, int64_t t0, int64_t count, int64_t pitch,
                                          T* E) {
  output_gradient_transform_tiles<M, T, false>(g, dy, t0, count, pitch, E);
}

// The 3x3 taps G^T W G of one filter's a*a points, read point-major from
// `points` (points `point_stride` apart), in the order every version uses.
template <int M, typename T>
__device__ __forceinline__ void weight_taps(const Matrices<M, T>& mat, const T* points, int64_t point_stride,
                                            T (&taps)[9]) {
  constexpr int A = M + 2;
  T gw[3][A];  // G^T W
  for (int r = 0; r < 3; ++r)
    for (int y = 0; y < A; ++y) gw[r][y] = 0;
  for (int x = 0; x < A; ++x) {
    for (int y = 0; y < A; ++y) {
      const T v = points[(x * A + y) * point_stride];
      for (int r = 0; r < 3; ++r) gw[r][y] += mat.g[x][r] * v;
    }
  }
  for (int r = 0; r < 3; ++r) {
    for (int s = 0; s < 3; ++s) {
      T sum = 0;
      for (int y = 0; y < A; ++y) sum += gw[r][y] * mat.g[y][s];
      taps[r * 3 + s] = sum;
    }
  }
}

// One thread per (o, i): dw[o][i] = G^T W G.
template <int M, typename T>
__global__ void weight_transform(int O, int I, const T* W, T* dw) {
  const Matrices<M, T> mat;
  const int64_t total = static_cast<int64_t>(O) * I;
  for (int64_t e = grid_thread(); e < total; e += grid_threads()) {
    T taps[9];
    weight_taps(mat, W + e, total, taps);
    for (int k = 0; k < 9; ++k) dw[e * 9 + k] = taps[k];
  }
}

// ---- v3: v1's transforms, their global accesses coalesced ----
//
// Lanes of a warp hold consecutive tiles (as in v1), m output columns apart.
// A patch row is the m columns at the tile's own position plus a halo of two
// (the window reaches off_w columns to the left and 2 - off_w to the right).
// v1 reads it one value at a time, so at each read the lanes sit m values
// apart: 4-byte reads spread over 4m bytes, four times the sectors they use
// at m = 4. v3 loads the m own values in one or two vector accesses (lanes on
// adjacent tiles then touch adjacent bytes) and takes the halo from the
// neighbouring lanes by shuffles, which hold exactly those columns when they
// hold the adjacent tile of the same row; only the lanes at the edge of a
// warp, a tile row or a chunk read their halo from memory. The output
// transform stores, and the output-gradient transform loads, a tile's m
// values of a row the same way. The filter and weight transforms read (or
// write) 9 taps per thread, 36 bytes apart between lanes; v3 stages a
// block's taps in shared memory so that global memory sees whole rows.

// The widest access that moves a block of M elements at p whole: 16 bytes
// (float at M = 4, double), else 8 (float), else 0 (one value at a time).
// Rows whose width is no multiple of 4 alternate: with 30-wide rows of
// float, even rows start 16-byte aligned and odd ones 8-byte aligned.
template <int M, typename T>
__device__ __forceinline__ int block_access_bytes(const T* p) {
  if constexpr (M * sizeof(T) % 16 == 0) {
    if (dev::aligned16(p)) return 16;
  }
  if constexpr (std::is_same_v<T, float> && M % 2 == 0) {
    if (dev::aligned8(p)) return 8;
  }
  return 0;
}

// Elements q .. q+m-1 of a plane row of `width` (zero at and past width),
// in the widest accesses block_access_bytes allows where the block lies
// inside the row.
template <int M, typename T>
__device__ __forceinline__ void load_row_block(const T* row, int q, int width, T (&v)[M]) {
  if (q + M <= width) {
    const T* p = row + q;
    const int bytes = block_access_bytes<M>(p);
    if (bytes == 16) {
      for (int k = 0; k < M; k += dev::kVec16<T>) dev::load16(p + k, v + k);
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (bytes == 8) {
        for (int k = 0; k < M; k += 2) dev::load8(p + k, v + k);
        return;
      }
    }
  }
  for (int k = 0; k < M; ++k) v[k] = q + k < width ? row[q + k] : T(0);
}

// Stores v[k] at q + k of a plane row for q + k < width, as load_row_block reads.
template <int M, typename T>
__device__ __forceinline__ void store_row_block(T* row, int q, int width, const T (&v)[M]) {
  if (q + M <= width) {
    T* p = row + q;
    const int bytes = block_access_bytes<M>(p);
    if (bytes == 16) {
      for (int k = 0; k < M; k += dev::kVec16<T>) dev::store16(p + k, v + k);
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (bytes == 8) {
        for (int k = 0; k < M; k += 2) dev::store8(p + k, v + k);
        return;
      }
    }
  }
  for (int k = 0; k < M && q + k < width; ++k) row[q + k] = v[k];
}

// v3's input transform: v1's, with the patch rows loaded as above. kOff is
// g.off_w (0, 1 or 2: the left halo's width). Whole warps go round the loop
// together, as the shuffles need every lane; lanes past the end hold no tile.
template <int M, typename T, int kOff>
__global__ void input_transform_halo(WinogradGeometry g, const T* in, int64_t t0, int64_t count, int64_t pitch,
                                     T* V) {
  constexpr int A = M + 2;
  const Matrices<M, T> mat;
  const int64_t total = g.in_channels * count;
  const int lane = static_cast<int>(lane_id());
  for (int64_t first = grid_thread() - lane; first < total; first += grid_threads()) {
    const int64_t e = first + lane;
    const bool mine = e < total;
    const int c = mine ? static_cast<int>(e / count) : 0;
    const int64_t j = mine ? e % count : 0;
    const TilePlace at = place(g, t0 + j);
    // The lane before holds tile j - 1 of the same channel; it is the tile to
    // the left when this one does not start its tile row. Likewise after.
    const bool left_in_lane = mine && lane > 0 && j > 0 && at.q > 0;
    const bool right_in_lane = mine && lane + 1 < kWarpSize && j + 1 < count && at.q + M < g.tiles_w * M;
    const T* plane = in + (at.n * g.in_channels + c) * g.in_h * g.in_w;
    T d[A][A];
    for (int x = 0; x < A; ++x) {
      const int h = at.p - g.off_h + x;
      const bool row_inside = mine && h >= 0 && h < g.in_h;
      const T* row = plane + static_cast<int64_t>(row_inside ? h : 0) * g.in_w;
      T own[M];
      if (row_inside) {
        load_row_block(row, at.q, g.in_w, own);
      } else {
        for (int k = 0; k < M; ++k) own[k] = T(0);
      }
      // left[k] is column q - 2 + k, right[k] column q + m + k; the window
      // reads left[2 - kOff ..] and right[.. 2 - kOff).
      T left[2] = {T(0), T(0)}, right[2] = {T(0), T(0)};
      for (int k = 2 - kOff; k < 2; ++k) left[k] = shfl_up(own[M - 2 + k], 1);
      for (int k = 0; k < 2 - kOff; ++k) right[k] = shfl_down(own[k], 1);
      if (!left_in_lane) {
        for (int k = 2 - kOff; k < 2; ++k) {
          const int w = at.q - 2 + k;
          left[k] = row_inside && w >= 0 && w < g.in_w ? row[w] : T(0);
        }
      }
      if (!right_in_lane) {
        for (int k = 0; k < 2 - kOff; ++k) {
          const int w = at.q + M + k;
          right[k] = row_inside && w < g.in_w ? row[w] : T(0);
        }
      }
      for (int y = 0; y < A; ++y) {
        const int col = y - kOff;  // from q
        d[x][y] = col < 0 ? left[col + 2] : (col < M ? own[col] : right[col - M]);
      }
    }
    if (mine) store_input_transform(mat, d, g.in_channels * pitch, V + static_cast<int64_t>(c) * pitch + j);
  }
}

// v3's output transform and output-gradient transform: v1's, each row
// through store_row_block (load_row_block).
template <int M, typename T>
__global__ void output_transform_rows(WinogradGeometry g, const T* Mx, const T* bias, int64_t t0, int64_t count,
                                      int64_t pitch, T* out) {
  output_transform_tiles<M, T, true>(g, Mx, bias, t0, count, pitch, out);
}

template <int M, typename T>
__global__ void output_gradient_transform_rows(WinogradGeometry g, const T* dy, int64_t t0, int64_t count,
                                               int64_t pitch, T* E) {
  output_gradient_transform_tiles<M, T, true>(g, dy, t0, count, pitch, E);
}

// v3's filter transform: a block copies its filters' taps into shared
// memory, consecutive threads on consecutive taps (whole rows of w where the
// filters are consecutive, as unflipped; 36-byte runs where backward-data's
// flip takes them a column apart), then each thread transforms its own
// (reading 9 apart: 9 is odd, so the lanes fall on distinct banks). Blocks go
// round the loop together (the barriers); blockDim.x is kThreads.
template <int M, typename T>
__global__ void filter_transform_staged(FilterArgs<T> f, T* U) {
  __shared__ SharedArray<T[kThreads * 9]> taps;
  const Matrices<M, T> mat;
  const int64_t total = static_cast<int64_t>(f.O) * f.I;
  const int t = static_cast<int>(threadIdx.x);
  for (int64_t e0 = static_cast<int64_t>(blockIdx.x) * kThreads; e0 < total;
       e0 += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int n = static_cast<int>(total - e0 < kThreads ? total - e0 : kThreads);
    for (int k = t; k < n * 9; k += kThreads) taps[k] = f.w[source_filter(f, e0 + k / 9) * 9 + k % 9];
    __syncthreads();
    if (t < n) {
      T g[3][3];
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) g[r][s] = taps[t * 9 + (f.flip ? (2 - r) * 3 + (2 - s) : r * 3 + s)];
      store_filter_transform(mat, g, total, U + e0 + t);
    }
    __syncthreads();
  }
}

// v3's weight transform: each thread's 9 taps go through shared memory, and
// the block writes its filters' taps to dw in whole rows.
template <int M, typename T>
__global__ void weight_transform_staged(const T* W, int64_t total, T* dw) {
  __shared__ SharedArray<T[kThreads * 9]> taps;
  const Matrices<M, T> mat;
  const int t = static_cast<int>(threadIdx.x);
  for (int64_t e0 = static_cast<int64_t>(blockIdx.x) * kThreads; e0 < total;
       e0 += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int n = static_cast<int>(total - e0 < kThreads ? total - e0 : kThreads);
    if (t < n) {
      T mine[9];
      weight_taps(mat, W + e0 + t, total, mine);
      for (int k = 0; k < 9; ++k) taps[t * 9 + k] = mine[k];
    }
    __syncthreads();
    for (int k = t; k < n * 9; k += kThreads) dw[e0 * 9 + k] = taps[k];
    __syncthreads();
  }
}

// v1: one thread per (xi, o, j), a dot product over o's group of channels.
// Consecutive threads take consecutive tiles: V loads and M stores coalesce,
// the U load is a broadcast.
template <typename T>
__global__ void products_naive(WinogradGeometry g, int points, const T* U, const T* V, int64_t count, int64_t pitch,
                               T* Mx) {
  const int O = g.out_channels, C = g.in_channels, Og = O / g.groups, Ig = C / g.groups;
  const int64_t total = static_cast<int64_t>(points) * O * count;
  for (int64_t e = grid_thread(); e < total; e += grid_threads()) {
    const int64_t j = e % count;
    const int64_t row = e / count;  // xi * O + o
    const int o = static_cast<int>(row % O), xi = static_cast<int>(row / O);
    const T* u = U + row * Ig;
    const T* v = V + (static_cast<int64_t>(xi) * C + (o / Og) * Ig) * pitch + j;
    T acc = 0;
    for (int i = 0; i < Ig; ++i) acc = dev::fma(u[i], v[i * pitch], acc);
    Mx[row * pitch + j] = acc;
  }
}

// v1: one thread per (xi, o, i), a dot product over the chunk's tiles.
template <typename T>
__global__ void weight_products_naive(WinogradGeometry g, int points, const T* E, const T* V, int64_t count,
                                      int64_t pitch, bool accumulate, T* W) {
  const int O = g.out_channels, C = g.in_channels, Og = O / g.groups, Ig = C / g.groups;
  const int64_t total = static_cast<int64_t>(points) * O * Ig;
  for (int64_t e = grid_thread(); e < total; e += grid_threads()) {
    const int i = static_cast<int>(e % Ig);
    const int64_t row = e / Ig;  // xi * O + o
    const int o = static_cast<int>(row % O), xi = static_cast<int>(row / O);
    const T* ev = E + row * pitch;
    const T* v = V + (static_cast<int64_t>(xi) * C + (o / Og) * Ig + i) * pitch;
    T acc = 0;
    for (int64_t j = 0; j < count; ++j) acc = dev::fma(ev[j], v[j], acc);
    W[e] = accumulate ? W[e] + acc : acc;
  }
}

template <typename Kernel, typename... Args>
void grid_launch(Kernel kernel, int64_t n, Args... args) {
  const LaunchShape shape = grid_stride_shape(n, kThreads, 65535);
  launch(kernel, dim3(shape.blocks), dim3(shape.threads), 0, nullptr, args...);
}

// Calls f.template operator()<M>() for the tile side m (2 or 4).
template <typename F>
void dispatch_tile(int m, F&& f) {
  CK_CHECK(m == 2 || m == 4, "conv2d_winograd: output tile ", m, " is not 2 or 4");
  if (m == 4) {
    f.template operator()<4>();
  } else {
    f.template operator()<2>();
  }
}

void check_version(int version) {
  CK_CHECK(version >= 1 && version <= kVersions, "conv2d_winograd: no version ", version, " (versions are 1 to ",
           kVersions, ")");
}

int points_of(int m) { return (m + 2) * (m + 2); }

// v2's and v3's batched products: the strict "gemm" family, or the tensor-core GEMM
// rounding to `rounding`.
void launch_products(DType dtype, std::optional<TensorCorePrecision> rounding, const GemmArgs& a) {
  if (rounding) {
    launch_gemm_tensor_core(*rounding, dtype, a);
  } else {
    launch_gemm(dtype, a);
  }
}

}  // namespace

int conv2d_winograd_version() {
  static const bool registered = [] {
    register_kernel_family({"conv2d_winograd", kVersions, 3,
                            "v1 one kernel per stage (filter, input, output transforms) and the per-point channel "
                            "products one thread per value; "
                            "v2 v1's transforms, the products as the gemm family's batched tiled GEMM; "
                            "v3 v2 with the transforms' global accesses coalesced (rows in vector accesses, the "
                            "input halo by warp shuffles, filter taps staged in shared memory)"});
    return true;
  }();
  (void)registered;
  return kernel_version("conv2d_winograd");
}

void launch_winograd_filter_transform(int version, DType dtype, int m, const WinogradFilterSource& s, void* U) {
  check_version(version);
  dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = int64_t{s.O} * s.I;
    const FilterArgs<T> f{static_cast<const T*>(s.w), s.O, s.I, s.flip, s.Cg, s.Kg};
    dispatch_tile(m, [&]<int M>() {
      if (version >= 3) {
        grid_launch(filter_transform_staged<M, T>, total, f, static_cast<T*>(U));
      } else {
        grid_launch(filter_transform<M, T>, total, f, static_cast<T*>(U));
      }
    });
  });
}

void launch_winograd_input_transform(int version, DType dtype, const WinogradGeometry& g, const void* in, int64_t t0,
                                     int64_t count, int64_t pitch, void* V) {
  check_version(version);
  dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(in);
    T* v = static_cast<T*>(V);
    const int64_t total = g.in_channels * count;
    dispatch_tile(g.m, [&]<int M>() {
      if (version < 3 || g.off_w < 0 || g.off_w > 2) {
        grid_launch(input_transform<M, T>, total, g, x, t0, count, pitch, v);
      } else if (g.off_w == 0) {
        grid_launch(input_transform_halo<M, T, 0>, total, g, x, t0, count, pitch, v);
      } else if (g.off_w == 1) {
        grid_launch(input_transform_halo<M, T, 1>, total, g, x, t0, count, pitch, v);
      } else {
        grid_launch(input_transform_halo<M, T, 2>, total, g, x, t0, count, pitch, v);
      }
    });
  });
}

void launch_winograd_output_transform(int version, DType dtype, const WinogradGeometry& g, const void* Mx,
                                      const void* bias, int64_t t0, int64_t count, int64_t pitch, void* out) {
  check_version(version);
  dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = g.out_channels * count;
    const T* mx = static_cast<const T*>(Mx);
    const T* b = static_cast<const T*>(bias);
    T* y = static_cast<T*>(out);
    dispatch_tile(g.m, [&]<int M>() {
      if (version >= 3) {
        grid_launch(output_transform_rows<M, T>, total, g, mx, b, t0, count, pitch, y);
      } else {
        grid_launch(output_transform<M, T>, total, g, mx, b, t0, count, pitch, y);
      }
    });
  });
}

void launch_winograd_output_gradient_transform(int version, DType dtype, const WinogradGeometry& g, const void* dy,
                                               int64_t t0, int64_t count, int64_t pitch, void* E) {
  check_version(version);
  dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = g.out_channels * count;
    const T* d = static_cast<const T*>(dy);
    T* e = static_cast<T*>(E);
    dispatch_tile(g.m, [&]<int M>() {
      if (version >= 3) {
        grid_launch(output_gradient_transform_rows<M, T>, total, g, d, t0, count, pitch, e);
      } else {
        grid_launch(output_gradient_transform<M, T>, total, g, d, t0, count, pitch, e);
      }
    });
  });
}

void launch_winograd_weight_transform(int version, DType dtype, int m, int O, int I, const void* W, void* dw) {
  check_version(version);
  dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = int64_t{O} * I;
    dispatch_tile(m, [&]<int M>() {
      if (version >= 3) {
        grid_launch(weight_transform_staged<M, T>, total, static_cast<const T*>(W), total, static_cast<T*>(dw));
      } else {
        grid_launch(weight_transform<M, T>, total, O, I, static_cast<const T*>(W), static_cast<T*>(dw));
      }
    });
  });
}

std::optional<TensorCorePrecision> winograd_products_precision(int version, DType dtype, Float32Precision precision) {
  if (version < 2 || dtype != DType::float32 || precision == Float32Precision::highest) return std::nullopt;
  return TensorCorePrecision::tf32;
}

void launch_winograd_products(int version, DType dtype, Float32Precision precision, const WinogradGeometry& g,
                              const void* U, const void* V, int64_t count, int64_t pitch, void* Mx) {
  check_version(version);
  const int points = points_of(g.m);
  if (version == 1) {
    dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
      using T = decltype(tag);
      grid_launch(products_naive<T>, int64_t{points} * g.out_channels * count, g, points, static_cast<const T*>(U),
                  static_cast<const T*>(V), count, pitch, static_cast<T*>(Mx));
    });
    return;
  }
  const int64_t Og = g.out_channels / g.groups, Ig = g.in_channels / g.groups;
  const auto size = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    GemmArgs a;
    a.M = Og, a.N = count, a.K = Ig, a.batch = points;
    a.a = static_cast<const char*>(U) + grp * Og * Ig * size, a.lda = Ig, a.stride_a = g.out_channels * Ig;
    a.b = static_cast<const char*>(V) + grp * Ig * pitch * size, a.ldb = pitch, a.stride_b = g.in_channels * pitch;
    a.c = static_cast<char*>(Mx) + grp * Og * pitch * size, a.ldc = pitch, a.stride_c = g.out_channels * pitch;
    launch_products(dtype, winograd_products_precision(version, dtype, precision), a);
  }
}

void launch_winograd_weight_products(int version, DType dtype, Float32Precision precision, const WinogradGeometry& g,
                                     const void* E, const void* V, int64_t count, int64_t pitch, bool accumulate,
                                     void* W) {
  check_version(version);
  const int points = points_of(g.m);
  if (version == 1) {
    dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
      using T = decltype(tag);
      grid_launch(weight_products_naive<T>, int64_t{points} * g.out_channels * (g.in_channels / g.groups), g, points,
                  static_cast<const T*>(E), static_cast<const T*>(V), count, pitch, accumulate, static_cast<T*>(W));
    });
    return;
  }
  const int64_t Og = g.out_channels / g.groups, Ig = g.in_channels / g.groups;
  const auto size = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    GemmArgs a;  // W[xi] (Og x Ig) (+)= E[xi] (Og x count) * V[xi]^T (count x Ig)
    a.M = Og, a.N = Ig, a.K = count, a.batch = points;
    a.a = static_cast<const char*>(E) + grp * Og * pitch * size, a.lda = pitch, a.stride_a = g.out_channels * pitch;
    a.trans_b = true;
    a.b = static_cast<const char*>(V) + grp * Ig * pitch * size, a.ldb = pitch, a.stride_b = g.in_channels * pitch;
    a.c = static_cast<char*>(W) + grp * Og * Ig * size, a.ldc = Ig, a.stride_c = g.out_channels * Ig;
    a.beta = accumulate ? 1 : 0;
    launch_products(dtype, winograd_products_precision(version, dtype, precision), a);
  }
}

}  // namespace convkit::CK_GPU_NS
