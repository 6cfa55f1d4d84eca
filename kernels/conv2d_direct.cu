// Direct convolution kernels: the defining sums (docs/algorithms/direct.md),
// evaluated on the GPU with no workspace but v4's backward-weights partials.
// docs/gpu/conv2d_direct.md walks through them.
//
// Floors, per pass (forward, backward-data and backward-weights cost the same):
//   FLOPs  2 * N * K * C/g * R * S * P * Q     (Conv2dDesc::flops)
//   bytes  (N*C*H*W + K*C/g*R*S + N*K*P*Q) * sizeof(T): every tensor read or
//          written once. The arithmetic intensity is R*S*C/g-ish FLOPs per
//          byte, so a direct convolution can be compute bound; v1 is not
//          because it re-reads every input value R*S*K/g times from cache.
//
// Versions ("conv2d_direct"):
//   v1  one thread per output element (forward y, backward-data dx,
//       backward-weights dw) and a loop over its whole sum, reading global
//       memory directly. Obviously right; the reference for v2.
//   v2  shared-memory tiles. Forward: a block stages the input patch under
//       an 8x16 output tile and the filters of 8 output channels, for a chunk
//       of input channels at a time; each thread keeps 8 output channels in
//       registers. Backward-data: the same gather for an 8x16 dx tile from the
//       dy patch above it. Backward-weights: a block owns a kb x cb x R x S
//       block of dw (one thread per element) and walks every 8x16 output tile
//       of every image, staging the dy tile and the input patch.
//   v3  an outer-product register tile (conv2d_direct_register_tiled.cu):
//       4 pixels x 8 output channels per thread, 16-byte filter reads, index
//       tables. Forward, backward-data at stride 1 as the forward of the
//       flipped problem, and backward-weights (8 filters x 4 of its entries
//       per thread); elsewhere (backward-data at stride > 1, tiles that do
//       not fit) version 3 runs v2's kernels.
//   v4  v3 with backward-weights split over the pixels: slices of (image,
//       pixel tile) units in grid.z, partial dw in a workspace, summed in
//       slice order (deterministic); with one slice it is v3. Forward and
//       backward-data are v3's.
//   v5  v4 with backward-data of groups of at most 4 input channels (a
//       first layer) on its own kernel: a thread per dx pixel for every
//       channel of its group, the group's filters in shared memory (see
//       "v5" below); v4 elsewhere, to the bit. The default.
#include <algorithm>
#include <string>

#include "convkit/backend/kernel_versions.h"
#include "kernels/conv2d_direct.cuh"
#include "kernels/conv2d_direct_register_tiled.cuh"
#include "kernels/device_math.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/tensor_view.cuh"
#include "kernels/vector_access.cuh"

namespace convkit::CK_GPU_NS {

namespace {

using std::int64_t;

// Shared memory a v2 block may use: the default limit without opting in to more.
constexpr std::size_t kMaxSharedBytes = 48 * 1024;

__device__ __forceinline__ int64_t grid_start() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Floor of a / b for b > 0 and any a (C++ division truncates toward zero).
__host__ __device__ __forceinline__ int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

__host__ __device__ __forceinline__ int ceil_div(int a, int b) { return (a + b - 1) / b; }

// ============================== v1: one thread per output element ==============================

// y[n][k][p][q] = b[k] + sum_{c, r, s} x[n][g*Cg + c][p*sh - pt + r*dh][q*sw - pl + s*dw] * w[k][c][r][s].
// Consecutive threads take consecutive q: x loads of a warp are (for stride 1)
// consecutive addresses, the w load is one address (a broadcast).
template <typename T>
__global__ void direct_forward_v1(ConvGeometry g, const T* x, const T* w, const T* b, T* y) {
  const int64_t total = static_cast<int64_t>(g.N) * g.K * g.P * g.Q;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const int q = static_cast<int>(i % g.Q);
    int64_t rest = i / g.Q;
    const int p = static_cast<int>(rest % g.P);
    rest /= g.P;
    const int k = static_cast<int>(rest % g.K);
    const int n = static_cast<int>(rest / g.K);
    const int group = k / g.Kg;
    const T* x_image = x + (static_cast<int64_t>(n) * g.C + static_cast<int64_t>(group) * g.Cg) * g.H * g.W;
    const T* w_filter = w + static_cast<int64_t>(k) * g.Cg * g.R * g.S;
    T acc = b != nullptr ? b[k] : T(0);
    for (int c = 0; c < g.Cg; ++c) {
      for (int r = 0; r < g.R; ++r) {
        const int h = p * g.stride_h - g.pad_top + r * g.dilation_h;
        if (h < 0 || h >= g.H) continue;
        for (int s = 0; s < g.S; ++s) {
          const int col = q * g.stride_w - g.pad_left + s * g.dilation_w;
          if (col < 0 || col >= g.W) continue;
          acc = dev::fma(x_image[(static_cast<int64_t>(c) * g.H + h) * g.W + col], w_filter[(c * g.R + r) * g.S + s], acc);
        }
      }
    }
    y[i] = acc;
  }
}

// dx[n][c][h][w] = sum over (k in c's group, r, s) with p = (h + pt - r*dh) / sh
// and q = (w + pl - s*dw) / sw exact and inside dy of dy[n][k][p][q] * w[k][c][r][s]:
// a gather, so every dx element has one owner and no atomics are needed.
template <typename T>
__global__ void direct_backward_data_v1(ConvGeometry g, const T* dy, const T* w, T* dx) {
  const int64_t total = static_cast<int64_t>(g.N) * g.C * g.H * g.W;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const int col = static_cast<int>(i % g.W);
    int64_t rest = i / g.W;
    const int h = static_cast<int>(rest % g.H);
    rest /= g.H;
    const int c = static_cast<int>(rest % g.C);
    const int n = static_cast<int>(rest / g.C);
    const int group = c / g.Cg, c_in_group = c % g.Cg;
    T acc = T(0);
    for (int kk = 0; kk < g.Kg; ++kk) {
      const int k = group * g.Kg + kk;
      const T* dy_plane = dy + (static_cast<int64_t>(n) * g.K + k) * g.P * g.Q;
      const T* w_filter = w + (static_cast<int64_t>(k) * g.Cg + c_in_group) * g.R * g.S;
      for (int r = 0; r < g.R; ++r) {
        const int th = h + g.pad_top - r * g.dilation_h;
        if (th < 0 || th % g.stride_h != 0) continue;
        const int p = th / g.stride_h;
        if (p >= g.P) continue;
        for (int s = 0; s < g.S; ++s) {
          const int tw = col + g.pad_left - s * g.dilation_w;
          if (tw < 0 || tw % g.stride_w != 0) continue;
          const int q = tw / g.stride_w;
          if (q >= g.Q) continue;
          acc = dev::fma(dy_plane[static_cast<int64_t>(p) * g.Q + q], w_filter[r * g.S + s], acc);
        }
      }
    }
    dx[i] = acc;
  }
}

// dw[k][c][r][s] = sum_{n, p, q} dy[n][k][p][q] * x[n][g*Cg + c][p*sh - pt + r*dh][q*sw - pl + s*dw].
// One thread per dw element, N*P*Q products each: few threads and long serial
// sums when the filter bank is small, which v2 addresses.
template <typename T>
__global__ void direct_backward_weights_v1(ConvGeometry g, const T* x, const T* dy, T* dw) {
  const int64_t total = static_cast<int64_t>(g.K) * g.Cg * g.R * g.S;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const int s = static_cast<int>(i % g.S);
    int64_t rest = i / g.S;
    const int r = static_cast<int>(rest % g.R);
    rest /= g.R;
    const int c = static_cast<int>(rest % g.Cg);
    const int k = static_cast<int>(rest / g.Cg);
    const int channel = (k / g.Kg) * g.Cg + c;
    T acc = T(0);
    for (int n = 0; n < g.N; ++n) {
      const T* x_plane = x + (static_cast<int64_t>(n) * g.C + channel) * g.H * g.W;
      const T* dy_plane = dy + (static_cast<int64_t>(n) * g.K + k) * g.P * g.Q;
      for (int p = 0; p < g.P; ++p) {
        const int h = p * g.stride_h - g.pad_top + r * g.dilation_h;
        if (h < 0 || h >= g.H) continue;
        for (int q = 0; q < g.Q; ++q) {
          const int col = q * g.stride_w - g.pad_left + s * g.dilation_w;
          if (col < 0 || col >= g.W) continue;
          acc = dev::fma(dy_plane[static_cast<int64_t>(p) * g.Q + q], x_plane[static_cast<int64_t>(h) * g.W + col], acc);
        }
      }
    }
    dw[i] = acc;
  }
}

// ============================== v2: shared-memory tiles ==============================

// Output tile of a forward / backward-data block, and its thread layout:
// thread t computes pixel (t / kTileCols, t % kTileCols) of the tile.
constexpr int kTileRows = 8;
constexpr int kTileCols = 16;
constexpr int kTileThreads = kTileRows * kTileCols;
// Channels each thread accumulates in registers: output channels (forward),
// input channels (backward-data).
constexpr int kChannelBlock = 8;

// Shared-memory layout of one v2 launch, computed on the host.
struct DirectTiles {
  int chunk;             // channels staged per step (input channels forward, output channels backward-data)
  int patch_h, patch_w;  // staged input (or dy) patch per channel
};

// Forward, block = (output tile, 8 output channels of one group, image).
// Per chunk of input channels the block stages
//   patch [chunk][patch_h][patch_w]   the input under the tile, zero padded
//   filt  [chunk][R][S][8]            the 8 filters' taps, channel-fastest
// Reuse bought: a patch value is loaded from global memory once per block and
// read from shared memory by up to R*S threads for 8 channels each (R*S*8
// FMAs, v1 fetches it for every one); a weight is loaded once and used by all
// 128 pixels. The warp reads 8 consecutive weights at one address (broadcast)
// and 16 consecutive patch columns per row (conflict-free at stride 1).
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    direct_forward_v2(ConvGeometry g, DirectTiles t, const T* x, const T* w, const T* b, T* y) {
  CK_DYNAMIC_SHARED(T, smem);
  const int patch_size = t.patch_h * t.patch_w, taps = g.R * g.S;
  T* patch = smem;
  T* filt = smem + t.chunk * patch_size;
  const int tiles_q = ceil_div(g.Q, kTileCols);
  const int p0 = static_cast<int>(blockIdx.x) / tiles_q * kTileRows;
  const int q0 = static_cast<int>(blockIdx.x) % tiles_q * kTileCols;
  const int kblocks = ceil_div(g.Kg, kChannelBlock);
  const int group = static_cast<int>(blockIdx.y) / kblocks;
  const int k0 = static_cast<int>(blockIdx.y) % kblocks * kChannelBlock;  // within the group
  const int n = static_cast<int>(blockIdx.z);
  const int tid = static_cast<int>(threadIdx.x);
  const int ty = tid / kTileCols, tx = tid % kTileCols;
  const int h_origin = p0 * g.stride_h - g.pad_top, w_origin = q0 * g.stride_w - g.pad_left;
  const T* x_group = x + (static_cast<int64_t>(n) * g.C + static_cast<int64_t>(group) * g.Cg) * g.H * g.W;
  const T* w_group = w + static_cast<int64_t>(group) * g.Kg * g.Cg * taps;

  T acc[kChannelBlock];
  CK_UNROLL for (int j = 0; j < kChannelBlock; ++j) acc[j] = T(0);
  for (int c0 = 0; c0 < g.Cg; c0 += t.chunk) {
    // Consecutive threads load consecutive columns of an input row: coalesced.
    for (int i = tid; i < t.chunk * patch_size; i += kTileThreads) {
      const int cl = i / patch_size, rem = i % patch_size;
      const int h = h_origin + rem / t.patch_w, col = w_origin + rem % t.patch_w;
      T v = T(0);
      if (c0 + cl < g.Cg && h >= 0 && h < g.H && col >= 0 && col < g.W)
        v = x_group[(static_cast<int64_t>(c0 + cl) * g.H + h) * g.W + col];
      patch[i] = v;
    }
    // Read in the global order (k, c, r, s), which is contiguous for each k.
    for (int i = tid; i < kChannelBlock * t.chunk * taps; i += kTileThreads) {
      const int j = i / (t.chunk * taps), rem = i % (t.chunk * taps);
      const int cl = rem / taps, tap = rem % taps;
      T v = T(0);
      if (k0 + j < g.Kg && c0 + cl < g.Cg)
        v = w_group[(static_cast<int64_t>(k0 + j) * g.Cg + c0 + cl) * taps + tap];
      filt[(cl * taps + tap) * kChannelBlock + j] = v;
    }
    __syncthreads();
    for (int cl = 0; cl < t.chunk; ++cl) {
      for (int r = 0; r < g.R; ++r) {
        const T* patch_row = patch + (cl * t.patch_h + ty * g.stride_h + r * g.dilation_h) * t.patch_w + tx * g.stride_w;
        const T* filt_row = filt + (cl * taps + r * g.S) * kChannelBlock;
        for (int s = 0; s < g.S; ++s) {
          const T v = patch_row[s * g.dilation_w];
          CK_UNROLL for (int j = 0; j < kChannelBlock; ++j) acc[j] = dev::fma(v, filt_row[s * kChannelBlock + j], acc[j]);
        }
      }
    }
    __syncthreads();  // before the next chunk overwrites the tiles
  }
  const int p = p0 + ty, q = q0 + tx;
  if (p >= g.P || q >= g.Q) return;
  for (int j = 0; j < kChannelBlock && k0 + j < g.Kg; ++j) {
    const int k = group * g.Kg + k0 + j;
    y[((static_cast<int64_t>(n) * g.K + k) * g.P + p) * g.Q + q] = acc[j] + (b != nullptr ? b[k] : T(0));
  }
}

// Backward-data, block = (dx tile, 8 input channels of one group, image): the
// v1 gather with its operands staged per chunk of output channels,
//   patch [chunk][patch_h][patch_w]   dy rows p_lo.. and columns q_lo.. that
//                                     can reach the tile (zero outside dy)
//   filt  [chunk][R][S][8]            w[k][c][r][s] for the 8 input channels
// Same reuse as the forward: each dy value is fetched once per block and read
// by every (pixel, tap) it reaches, for 8 channels; each weight serves 128 pixels.
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    direct_backward_data_v2(ConvGeometry g, DirectTiles t, const T* dy, const T* w, T* dx) {
  CK_DYNAMIC_SHARED(T, smem);
  const int patch_size = t.patch_h * t.patch_w, taps = g.R * g.S;
  T* patch = smem;
  T* filt = smem + t.chunk * patch_size;
  const int tiles_w = ceil_div(g.W, kTileCols);
  const int h0 = static_cast<int>(blockIdx.x) / tiles_w * kTileRows;
  const int w0 = static_cast<int>(blockIdx.x) % tiles_w * kTileCols;
  const int cblocks = ceil_div(g.Cg, kChannelBlock);
  const int group = static_cast<int>(blockIdx.y) / cblocks;
  const int c0 = static_cast<int>(blockIdx.y) % cblocks * kChannelBlock;  // within the group
  const int n = static_cast<int>(blockIdx.z);
  const int tid = static_cast<int>(threadIdx.x);
  const int ty = tid / kTileCols, tx = tid % kTileCols;
  // The first dy row / column any pixel of the tile reads (floor, so every
  // offset below is >= 0 and a multiple test is a plain remainder).
  const int p_lo = floor_div(h0 + g.pad_top - (g.R - 1) * g.dilation_h, g.stride_h);
  const int q_lo = floor_div(w0 + g.pad_left - (g.S - 1) * g.dilation_w, g.stride_w);
  const T* dy_group = dy + (static_cast<int64_t>(n) * g.K + static_cast<int64_t>(group) * g.Kg) * g.P * g.Q;
  const T* w_group = w + static_cast<int64_t>(group) * g.Kg * g.Cg * taps;
  const int h = h0 + ty, col = w0 + tx;
  // Offsets of this pixel's reach from the patch origin, before the taps.
  const int base_h = h + g.pad_top - p_lo * g.stride_h, base_w = col + g.pad_left - q_lo * g.stride_w;

  T acc[kChannelBlock];
  CK_UNROLL for (int j = 0; j < kChannelBlock; ++j) acc[j] = T(0);
  for (int k0 = 0; k0 < g.Kg; k0 += t.chunk) {
    for (int i = tid; i < t.chunk * patch_size; i += kTileThreads) {
      const int kl = i / patch_size, rem = i % patch_size;
      const int p = p_lo + rem / t.patch_w, q = q_lo + rem % t.patch_w;
      T v = T(0);
      if (k0 + kl < g.Kg && p >= 0 && p < g.P && q >= 0 && q < g.Q)
        v = dy_group[(static_cast<int64_t>(k0 + kl) * g.P + p) * g.Q + q];
      patch[i] = v;
    }
    for (int i = tid; i < t.chunk * kChannelBlock * taps; i += kTileThreads) {
      const int kl = i / (kChannelBlock * taps), rem = i % (kChannelBlock * taps);
      const int j = rem / taps, tap = rem % taps;
      T v = T(0);
      if (k0 + kl < g.Kg && c0 + j < g.Cg)
        v = w_group[(static_cast<int64_t>(k0 + kl) * g.Cg + c0 + j) * taps + tap];
      filt[(kl * taps + tap) * kChannelBlock + j] = v;
    }
    __syncthreads();
    for (int kl = 0; kl < t.chunk; ++kl) {
      for (int r = 0; r < g.R; ++r) {
        const int th = base_h - r * g.dilation_h;
        if (th % g.stride_h != 0) continue;
        const T* patch_row = patch + (kl * t.patch_h + th / g.stride_h) * t.patch_w;
        const T* filt_row = filt + (kl * taps + r * g.S) * kChannelBlock;
        for (int s = 0; s < g.S; ++s) {
          const int tw = base_w - s * g.dilation_w;
          if (tw % g.stride_w != 0) continue;
          const T v = patch_row[tw / g.stride_w];
          CK_UNROLL for (int j = 0; j < kChannelBlock; ++j) acc[j] = dev::fma(v, filt_row[s * kChannelBlock + j], acc[j]);
        }
      }
    }
    __syncthreads();
  }
  if (h >= g.H || col >= g.W) return;
  for (int j = 0; j < kChannelBlock && c0 + j < g.Cg; ++j) {
    const int c = group * g.Cg + c0 + j;
    dx[((static_cast<int64_t>(n) * g.C + c) * g.H + h) * g.W + col] = acc[j];
  }
}

// Output tile walked by a backward-weights block.
constexpr int kWeightTileRows = 8;
constexpr int kWeightTileCols = 16;
constexpr int kWeightTilePixels = kWeightTileRows * kWeightTileCols;
// dw elements per thread at most (filters larger than 16x16 need more than one).
constexpr int kMaxEntriesPerThread = 4;
constexpr int kWeightThreads = 256;

struct WeightTiles {
  int kb, cb;            // output and input channels of the block's dw block
  int patch_h, patch_w;  // staged input patch per channel
};

// Backward-weights, block = a kb x cb x R x S block of dw (one group), one
// thread per dw element (up to 4 when R*S > 256). The block walks every
// 8x16 output tile of every image, staging
//   dyt   [kb][8][16]                the dy tile of its kb output channels
//   patch [cb][patch_h][patch_w]     the input under the tile, zero padded
// and each thread adds the tile's 128 products to its elements. Reuse: a dy
// value is fetched once per block and read by cb*R*S threads, an input value
// by kb*R*S; v1 fetches both for every product. The sums stay in registers
// across all tiles, so dw is written once, without atomics.
template <typename T>
__global__ void __launch_bounds__(kWeightThreads)
    direct_backward_weights_v2(ConvGeometry g, WeightTiles t, const T* x, const T* dy, T* dw) {
  CK_DYNAMIC_SHARED(T, smem);
  const int taps = g.R * g.S, patch_size = t.patch_h * t.patch_w;
  T* dyt = smem;
  T* patch = smem + t.kb * kWeightTilePixels;
  const int cblocks = ceil_div(g.Cg, t.cb);
  const int k0 = static_cast<int>(blockIdx.x) / cblocks * t.kb;  // within the group
  const int c0 = static_cast<int>(blockIdx.x) % cblocks * t.cb;
  const int group = static_cast<int>(blockIdx.y);
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  const int entries = t.kb * t.cb * taps;

  // Where each of this thread's elements reads in the staged tiles.
  int dy_offset[kMaxEntriesPerThread], patch_offset[kMaxEntriesPerThread];
  T acc[kMaxEntriesPerThread];
  CK_UNROLL for (int e = 0; e < kMaxEntriesPerThread; ++e) {
    acc[e] = T(0);
    const int entry = tid + e * threads;
    const int s = entry % g.S, r = entry / g.S % g.R, cl = entry / taps % t.cb, kl = entry / taps / t.cb;
    dy_offset[e] = kl * kWeightTilePixels;
    patch_offset[e] = (cl * t.patch_h + r * g.dilation_h) * t.patch_w + s * g.dilation_w;
  }

  const int tiles_p = ceil_div(g.P, kWeightTileRows), tiles_q = ceil_div(g.Q, kWeightTileCols);
  const int64_t tiles = static_cast<int64_t>(g.N) * tiles_p * tiles_q;
  for (int64_t tile = 0; tile < tiles; ++tile) {
    const int n = static_cast<int>(tile / (tiles_p * tiles_q));
    const int within = static_cast<int>(tile % (tiles_p * tiles_q));
    const int p0 = within / tiles_q * kWeightTileRows, q0 = within % tiles_q * kWeightTileCols;
    const T* dy_group = dy + (static_cast<int64_t>(n) * g.K + static_cast<int64_t>(group) * g.Kg + k0) * g.P * g.Q;
    for (int i = tid; i < t.kb * kWeightTilePixels; i += threads) {
      const int kl = i / kWeightTilePixels, pix = i % kWeightTilePixels;
      const int p = p0 + pix / kWeightTileCols, q = q0 + pix % kWeightTileCols;
      T v = T(0);
      if (k0 + kl < g.Kg && p < g.P && q < g.Q) v = dy_group[(static_cast<int64_t>(kl) * g.P + p) * g.Q + q];
      dyt[i] = v;
    }
    const T* x_group = x + (static_cast<int64_t>(n) * g.C + static_cast<int64_t>(group) * g.Cg + c0) * g.H * g.W;
    const int h_origin = p0 * g.stride_h - g.pad_top, w_origin = q0 * g.stride_w - g.pad_left;
    for (int i = tid; i < t.cb * patch_size; i += threads) {
      const int cl = i / patch_size, rem = i % patch_size;
      const int h = h_origin + rem / t.patch_w, col = w_origin + rem % t.patch_w;
      T v = T(0);
      if (c0 + cl < g.Cg && h >= 0 && h < g.H && col >= 0 && col < g.W)
        v = x_group[(static_cast<int64_t>(cl) * g.H + h) * g.W + col];
      patch[i] = v;
    }
    __syncthreads();
    CK_UNROLL for (int e = 0; e < kMaxEntriesPerThread; ++e) {
      if (tid + e * threads < entries) {
        const T* d = dyt + dy_offset[e];
        const T* xp = patch + patch_offset[e];
        T sum = T(0);
        for (int i = 0; i < kWeightTileRows; ++i) {
          const T* x_row = xp + i * g.stride_h * t.patch_w;
          for (int j = 0; j < kWeightTileCols; ++j) sum = dev::fma(d[i * kWeightTileCols + j], x_row[j * g.stride_w], sum);
        }
        acc[e] += sum;
      }
    }
    __syncthreads();
  }
  CK_UNROLL for (int e = 0; e < kMaxEntriesPerThread; ++e) {
    const int entry = tid + e * threads;
    const int tap = entry % taps, cl = entry / taps % t.cb, kl = entry / taps / t.cb;
    if (entry < entries && k0 + kl < g.Kg && c0 + cl < g.Cg) {
      const int k = group * g.Kg + k0 + kl;
      dw[(static_cast<int64_t>(k) * g.Cg + c0 + cl) * taps + tap] = acc[e];
    }
  }
}

// ============================== v5: backward-data for narrow inputs ==============================

// dx where each group has at most kNarrowChannels input channels: a
// network's first layer (3 for RGB). v3 runs backward-data as the forward
// of the flipped problem, whose outputs are dx's C/g channels, 8 to a
// thread: 3 channels leave 5/8 of its multiply-adds idle, and its blocks of
// 32 lanes stage a dy patch for a few multiply-adds each. On the H200
// resnet18-cifar's first layer took 0.257 ms there against cuDNN's 0.076
// (run 3 of 2026-11-28), where the floor is about 0.012 (dy's 33.5 MB read
// once).
// Here a thread owns one dx pixel and every channel of its group: v1's
// sum with its channel loop in registers, in v1's order (bit for bit v1's
// result). Per (k, r, s): one dy load and one 16-byte load of the 4 padded
// channels' taps from shared memory, the same address across the warp (a
// broadcast), for 4 multiply-adds. dy goes through L1: with k outer and
// the taps inner, a block's threads read neighbouring values of one dy
// plane within a few instructions of each other, so each value is fetched
// once and hit by the other R*S - 1 taps that reach it.
// Block = kNarrowThreads consecutive pixels of one image and group (grid.x
// over H*W, grid.y images, grid.z groups); its group's filters are staged
// once as [k][r][s][kNarrowChannels], channels past Cg zero.
constexpr int kNarrowChannels = 4;
constexpr int kNarrowThreads = 256;

std::size_t narrow_shared_bytes(const ConvGeometry& g, std::size_t elem) {
  return static_cast<std::size_t>(g.Kg) * g.R * g.S * kNarrowChannels * elem;
}

// The taps t in [0, taps) whose input coordinate i + pad - t * dilation
// falls inside [0, extent) at unit stride: [first, last], empty when
// first > last. Worked out once per thread, so the inner loops test nothing.
struct TapRange {
  int first, last;
};
__device__ __forceinline__ TapRange unit_stride_taps(int i, int pad, int dilation, int extent, int taps) {
  const int top = i + pad;  // the coordinate tap 0 reads
  // top - t * dilation < extent  <=>  t > (top - extent) / dilation
  const int first = top >= extent ? (top - extent) / dilation + 1 : 0;
  const int last = top >= 0 ? min(taps - 1, top / dilation) : -1;
  return {first, last};
}

template <typename T, bool kUnitStride>
__global__ void __launch_bounds__(kNarrowThreads)
    direct_backward_data_narrow(ConvGeometry g, const T* dy, const T* w, T* dx) {
  static_assert(kNarrowChannels % dev::kVec16<T> == 0, "the taps of a pixel are whole 16-byte loads");
  CK_DYNAMIC_SHARED(T, taps);
  const int group = static_cast<int>(blockIdx.z), n = static_cast<int>(blockIdx.y);
  const int taps_per_filter = g.R * g.S;
  const int staged = g.Kg * taps_per_filter * kNarrowChannels;
  for (int i = static_cast<int>(threadIdx.x); i < staged; i += static_cast<int>(blockDim.x)) {
    const int c = i % kNarrowChannels;
    const int tap = (i / kNarrowChannels) % taps_per_filter;
    const int kk = i / (kNarrowChannels * taps_per_filter);
    taps[i] = c < g.Cg ? w[((static_cast<int64_t>(group) * g.Kg + kk) * g.Cg + c) * taps_per_filter + tap] : T(0);
  }
  __syncthreads();
  const int pixel = static_cast<int>(blockIdx.x) * kNarrowThreads + static_cast<int>(threadIdx.x);
  if (pixel >= g.H * g.W) return;
  const int h = pixel / g.W, col = pixel % g.W;
  const int64_t plane = static_cast<int64_t>(g.P) * g.Q;
  const T* dy_group = dy + (static_cast<int64_t>(n) * g.K + static_cast<int64_t>(group) * g.Kg) * plane;
  T acc[kNarrowChannels] = {};
  // One tap: dy at (p, q) of plane dy_plane times the taps of the group's
  // channels, in v1's order (k, then r, then s, ascending).
  const auto multiply_add = [&](const T* dy_plane, const T* filter, int r, int s, int p, int q) {
    const T v = dy_plane[static_cast<int64_t>(p) * g.Q + q];
    T wv[kNarrowChannels];
    for (int i = 0; i < kNarrowChannels; i += dev::kVec16<T>)
      dev::load16(filter + (r * g.S + s) * kNarrowChannels + i, wv + i);
    for (int c = 0; c < kNarrowChannels; ++c) acc[c] = dev::fma(v, wv[c], acc[c]);
  };
  if constexpr (kUnitStride) {
    const TapRange rows = unit_stride_taps(h, g.pad_top, g.dilation_h, g.P, g.R);
    const TapRange cols = unit_stride_taps(col, g.pad_left, g.dilation_w, g.Q, g.S);
    for (int kk = 0; kk < g.Kg; ++kk) {
      const T* dy_plane = dy_group + kk * plane;
      const T* filter = taps + kk * taps_per_filter * kNarrowChannels;
      for (int r = rows.first; r <= rows.last; ++r)
        for (int s = cols.first; s <= cols.last; ++s)
          multiply_add(dy_plane, filter, r, s, h + g.pad_top - r * g.dilation_h, col + g.pad_left - s * g.dilation_w);
    }
  } else {
    for (int kk = 0; kk < g.Kg; ++kk) {
      const T* dy_plane = dy_group + kk * plane;
      const T* filter = taps + kk * taps_per_filter * kNarrowChannels;
      for (int r = 0; r < g.R; ++r) {
        const int th = h + g.pad_top - r * g.dilation_h;
        if (th < 0 || th % g.stride_h != 0 || th / g.stride_h >= g.P) continue;
        for (int s = 0; s < g.S; ++s) {
          const int tw = col + g.pad_left - s * g.dilation_w;
          if (tw < 0 || tw % g.stride_w != 0 || tw / g.stride_w >= g.Q) continue;
          multiply_add(dy_plane, filter, r, s, th / g.stride_h, tw / g.stride_w);
        }
      }
    }
  }
  const int64_t image_plane = static_cast<int64_t>(g.H) * g.W;
  T* dx_pixel = dx + (static_cast<int64_t>(n) * g.C + static_cast<int64_t>(group) * g.Cg) * image_plane + pixel;
  for (int c = 0; c < kNarrowChannels; ++c)
    if (c < g.Cg) dx_pixel[c * image_plane] = acc[c];
}

// ============================== host side ==============================

constexpr int kVersions = 5;
constexpr int kSplitWeightsVersion = 4, kNarrowVersion = 5;
// v5 changes only backward-data at C/g <= 4, where v3's kernel leaves 5/8
// of its tile idle; elsewhere it is v4 to the bit.
constexpr int kDefaultVersion = 5;

std::size_t forward_shared_bytes(const ConvGeometry& g, const DirectTiles& t, std::size_t elem) {
  return (static_cast<std::size_t>(t.chunk) * t.patch_h * t.patch_w +
          static_cast<std::size_t>(t.chunk) * g.R * g.S * kChannelBlock) * elem;
}

// The largest channel chunk (8, 4, 2 or 1) whose tiles fit; chunk 0 when none does.
DirectTiles forward_tiles(const ConvGeometry& g, std::size_t elem) {
  DirectTiles t{0, (kTileRows - 1) * g.stride_h + (g.R - 1) * g.dilation_h + 1,
                (kTileCols - 1) * g.stride_w + (g.S - 1) * g.dilation_w + 1};
  for (int chunk = 8; chunk >= 1; chunk /= 2) {
    t.chunk = chunk;
    if (forward_shared_bytes(g, t, elem) <= kMaxSharedBytes) return t;
  }
  t.chunk = 0;
  return t;
}

DirectTiles backward_data_tiles(const ConvGeometry& g, std::size_t elem) {
  // Rows p that can reach a tile row h in [h0, h0 + 8): p*sh in
  // [h0 + pt - (R-1)*dh, h0 + 7 + pt], at most (7 + (R-1)*dh) / sh + 2 of them.
  DirectTiles t{0, (kTileRows - 1 + (g.R - 1) * g.dilation_h) / g.stride_h + 2,
                (kTileCols - 1 + (g.S - 1) * g.dilation_w) / g.stride_w + 2};
  for (int chunk = 8; chunk >= 1; chunk /= 2) {
    t.chunk = chunk;
    if (forward_shared_bytes(g, t, elem) <= kMaxSharedBytes) return t;
  }
  t.chunk = 0;
  return t;
}

std::size_t weight_shared_bytes(const WeightTiles& t, std::size_t elem) {
  return (static_cast<std::size_t>(t.kb) * kWeightTilePixels + static_cast<std::size_t>(t.cb) * t.patch_h * t.patch_w) *
         elem;
}

// Grows the dw block (kb x cb channels) while it has at most kWeightThreads
// elements and its tiles fit in shared memory.
WeightTiles weight_tiles(const ConvGeometry& g, std::size_t elem) {
  const int taps = g.R * g.S;
  WeightTiles t{1, 1, (kWeightTileRows - 1) * g.stride_h + (g.R - 1) * g.dilation_h + 1,
                (kWeightTileCols - 1) * g.stride_w + (g.S - 1) * g.dilation_w + 1};
  for (bool grown = true; grown;) {
    grown = false;
    WeightTiles wider = t;
    wider.kb *= 2;
    if (t.kb < g.Kg && wider.kb * t.cb * taps <= kWeightThreads && weight_shared_bytes(wider, elem) <= kMaxSharedBytes) {
      t = wider;
      grown = true;
    }
    WeightTiles deeper = t;
    deeper.cb *= 2;
    if (t.cb < g.Cg && t.kb * deeper.cb * taps <= kWeightThreads && weight_shared_bytes(deeper, elem) <= kMaxSharedBytes) {
      t = deeper;
      grown = true;
    }
  }
  return t;
}

int weight_threads(const WeightTiles& t, const ConvGeometry& g) {
  const int entries = t.kb * t.cb * g.R * g.S;
  return std::min(kWeightThreads, (entries + 31) / 32 * 32);
}

constexpr int kMaxGridYZ = 65535;

bool v2_limits(const ConvGeometry& g, DType dtype, std::string* why) {
  const std::size_t elem = dtype_size(dtype);
  auto fail = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (forward_tiles(g, elem).chunk == 0 || backward_data_tiles(g, elem).chunk == 0)
    return fail(detail::concat("conv2d_direct v2: the input patch of one channel under an ", kTileRows, "x",
                               kTileCols, " tile exceeds ", kMaxSharedBytes,
                               " bytes of shared memory (filter, stride or dilation too large)"));
  const WeightTiles wt = weight_tiles(g, elem);
  if (weight_shared_bytes(wt, elem) > kMaxSharedBytes)
    return fail(detail::concat("conv2d_direct v2: the backward-weights patch of one channel exceeds ",
                               kMaxSharedBytes, " bytes of shared memory"));
  if (wt.kb * wt.cb * g.R * g.S > kWeightThreads * kMaxEntriesPerThread)
    return fail(detail::concat("conv2d_direct v2: a ", g.R, "x", g.S, " filter has more than ",
                               kWeightThreads * kMaxEntriesPerThread, " taps (one thread holds at most ",
                               kMaxEntriesPerThread, " dw elements)"));
  if (g.N > kMaxGridYZ || static_cast<int64_t>(g.groups) * ceil_div(std::max(g.Kg, g.Cg), kChannelBlock) > kMaxGridYZ)
    return fail(detail::concat("conv2d_direct v2: grid.y/z would exceed ", kMaxGridYZ, " (N = ", g.N,
                               ", groups = ", g.groups, ")"));
  return true;
}

void check_can_implement(int version, const ConvGeometry& g, DType dtype) {
  std::string why;
  CK_CHECK(conv2d_direct_can_implement(version, g, dtype, &why), why);
}

}  // namespace

ConvGeometry conv_geometry(const Conv2dDesc& d) {
  const int64_t limit = 0x7fffffff;
  auto fit = [&](int64_t v, const char* name) {
    CK_CHECK(v >= 0 && v <= limit, "conv2d (gpu): ", name, " = ", v, " does not fit the kernels' 32-bit coordinates; ",
             d.str());
    return static_cast<int>(v);
  };
  ConvGeometry g;
  g.N = fit(d.N, "N");
  g.C = fit(d.C, "C");
  g.H = fit(d.H, "H");
  g.W = fit(d.W, "W");
  g.K = fit(d.K, "K");
  g.R = fit(d.R, "R");
  g.S = fit(d.S, "S");
  g.P = fit(d.P(), "P");
  g.Q = fit(d.Q(), "Q");
  g.stride_h = fit(d.stride_h, "stride_h");
  g.stride_w = fit(d.stride_w, "stride_w");
  g.pad_top = fit(d.pad_top, "pad_top");
  g.pad_left = fit(d.pad_left, "pad_left");
  g.dilation_h = fit(d.dilation_h, "dilation_h");
  g.dilation_w = fit(d.dilation_w, "dilation_w");
  g.groups = fit(d.groups, "groups");
  g.Cg = fit(d.C_per_group(), "C/groups");
  g.Kg = fit(d.K_per_group(), "K/groups");
  // Pixel coordinates reach H + pad_top + (R-1)*dilation_h; keep them in int too.
  fit(d.H + d.pad_top + d.pad_bottom + (d.R - 1) * d.dilation_h + d.stride_h * 16, "padded height");
  fit(d.W + d.pad_left + d.pad_right + (d.S - 1) * d.dilation_w + d.stride_w * 16, "padded width");
  fit(d.C_per_group() * d.R * d.S, "C/groups * R * S");
  return g;
}

std::string direct_narrow_backward_data_cannot(const ConvGeometry& g, DType dtype) {
  if (g.Cg > kNarrowChannels)
    return detail::concat("groups of ", g.Cg, " input channels are more than its ", kNarrowChannels);
  const std::size_t bytes = narrow_shared_bytes(g, dtype_size(dtype));
  if (bytes > kMaxSharedBytes)
    return detail::concat("the group's filters take ", bytes, " bytes of shared memory, more than ",
                          kMaxSharedBytes);
  if (static_cast<int64_t>(g.H) * g.W > 0x7fffffff - kNarrowThreads)
    return detail::concat("H*W = ", static_cast<int64_t>(g.H) * g.W, " does not fit its int pixel index");
  if (g.N > kMaxGridYZ || g.groups > kMaxGridYZ)
    return detail::concat("grid.y/z would exceed ", kMaxGridYZ, " (N = ", g.N, ", groups = ", g.groups, ")");
  return {};
}

int conv2d_direct_version() {
  static const bool registered = [] {
    register_kernel_family({"conv2d_direct", kVersions, kDefaultVersion,
                            "v1 one thread per output element (y, dx or dw), operands read from global memory; "
                            "v2 shared-memory tiles: input patch + 8 filters per 8x16 output tile (forward), dy "
                            "patch + filters per dx tile (backward-data), dy tile + input patch per kb x cb x R x "
                            "S block of dw (backward-weights); "
                            "v3 register tiles of 4 pixels x 8 channels per thread with 16-byte filter reads and index "
                            "tables (all passes; backward-data at stride > 1 runs v2's kernel); "
                            "v4 v3 with backward-weights split over the pixels into slices, their partial dw summed "
                            "in slice order (a workspace); "
                            "v5 v4 with backward-data of groups of at most 4 input channels (a first layer) one dx "
                            "pixel of every channel per thread, the group's filters in shared memory"});
    return true;
  }();
  (void)registered;
  return kernel_version("conv2d_direct");
}

bool conv2d_direct_can_implement(int version, const ConvGeometry& g, DType dtype, std::string* why) {
  if (!is_floating(dtype)) {
    if (why) *why = detail::concat("conv2d_direct: dtype ", dtype, " is not supported (float32 or float64)");
    return false;
  }
  if (version == 1) return true;
  // Versions 3 to 5 run v2's kernels wherever their own do not fit, so they need what v2 needs.
  if (version >= 2 && version <= kVersions) return v2_limits(g, dtype, why);
  if (why) *why = detail::concat("conv2d_direct: no version ", version, " (versions are 1 to ", kVersions, ")");
  return false;
}

void launch_conv2d_direct_forward(int version, DType dtype, const ConvGeometry& g, const void* x, const void* w,
                                  const void* b, void* y) {
  check_can_implement(version, g, dtype);
  dispatch_floating(dtype, "conv2d_direct forward", [&](auto tag) {
    using T = decltype(tag);
    const T* xt = static_cast<const T*>(x);
    const T* wt = static_cast<const T*>(w);
    const T* bt = static_cast<const T*>(b);
    T* yt = static_cast<T*>(y);
    if (version == 1) {
      const LaunchShape s = grid_stride_shape(static_cast<int64_t>(g.N) * g.K * g.P * g.Q, 256, 65535);
      launch(direct_forward_v1<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, g, xt, wt, bt, yt);
      return;
    }
    if (version >= 3 && direct_register_tiled_forward_cannot(g, dtype).empty()) {
      launch_direct_register_tiled_forward(dtype, g, x, w, b, y);
      return;
    }
    const DirectTiles t = forward_tiles(g, sizeof(T));
    const dim3 grid(static_cast<unsigned>(ceil_div(g.P, kTileRows) * ceil_div(g.Q, kTileCols)),
                    static_cast<unsigned>(g.groups * ceil_div(g.Kg, kChannelBlock)), static_cast<unsigned>(g.N));
    launch(direct_forward_v2<T>, grid, dim3(kTileThreads), forward_shared_bytes(g, t, sizeof(T)), nullptr, g, t, xt,
           wt, bt, yt);
  });
}

void launch_conv2d_direct_backward_data(int version, DType dtype, const ConvGeometry& g, const void* dy,
                                        const void* w, void* dx) {
  check_can_implement(version, g, dtype);
  dispatch_floating(dtype, "conv2d_direct backward_data", [&](auto tag) {
    using T = decltype(tag);
    const T* dyt = static_cast<const T*>(dy);
    const T* wt = static_cast<const T*>(w);
    T* dxt = static_cast<T*>(dx);
    if (version == 1) {
      const LaunchShape s = grid_stride_shape(static_cast<int64_t>(g.N) * g.C * g.H * g.W, 256, 65535);
      launch(direct_backward_data_v1<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, g, dyt, wt, dxt);
      return;
    }
    if (version >= kNarrowVersion && direct_narrow_backward_data_cannot(g, dtype).empty()) {
      const dim3 grid(static_cast<unsigned>(ceil_div(g.H * g.W, kNarrowThreads)), static_cast<unsigned>(g.N),
                      static_cast<unsigned>(g.groups));
      const auto kernel = g.stride_h == 1 && g.stride_w == 1 ? direct_backward_data_narrow<T, true>
                                                             : direct_backward_data_narrow<T, false>;
      launch(kernel, grid, dim3(kNarrowThreads), narrow_shared_bytes(g, sizeof(T)), nullptr, g, dyt, wt, dxt);
      return;
    }
    if (version >= 3 && direct_register_tiled_backward_data_cannot(g, dtype).empty()) {
      launch_direct_register_tiled_backward_data(dtype, g, dy, w, dx);
      return;
    }
    const DirectTiles t = backward_data_tiles(g, sizeof(T));
    const dim3 grid(static_cast<unsigned>(ceil_div(g.H, kTileRows) * ceil_div(g.W, kTileCols)),
                    static_cast<unsigned>(g.groups * ceil_div(g.Cg, kChannelBlock)), static_cast<unsigned>(g.N));
    launch(direct_backward_data_v2<T>, grid, dim3(kTileThreads), forward_shared_bytes(g, t, sizeof(T)), nullptr, g,
           t, dyt, wt, dxt);
  });
}

std::size_t conv2d_direct_weights_workspace_bytes(int version, DType dtype, const ConvGeometry& g,
                                                  std::size_t workspace_limit) {
  if (version < kSplitWeightsVersion) return 0;
  const DirectWeightSplit split = direct_weight_split(g, dtype, workspace_limit);
  return split.slices > 1 ? static_cast<std::size_t>(split.slices) * g.K * g.Cg * g.R * g.S * dtype_size(dtype) : 0;
}

void launch_conv2d_direct_backward_weights(int version, DType dtype, const ConvGeometry& g, const void* x,
                                           const void* dy, void* dw, void* workspace, std::size_t workspace_limit) {
  check_can_implement(version, g, dtype);
  dispatch_floating(dtype, "conv2d_direct backward_weights", [&](auto tag) {
    using T = decltype(tag);
    const T* xt = static_cast<const T*>(x);
    const T* dyt = static_cast<const T*>(dy);
    T* dwt = static_cast<T*>(dw);
    if (version == 1) {
      const LaunchShape s = grid_stride_shape(static_cast<int64_t>(g.K) * g.Cg * g.R * g.S, 256, 65535);
      launch(direct_backward_weights_v1<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, g, xt, dyt, dwt);
      return;
    }
    if (version >= 3 && direct_register_tiled_backward_weights_cannot(g, dtype).empty()) {
      const DirectWeightSplit split =
          direct_weight_split(g, dtype, version >= kSplitWeightsVersion ? workspace_limit : 0);  // v3: one slice
      launch_direct_register_tiled_backward_weights(dtype, g, x, dy, dw, split, workspace);
      return;
    }
    const WeightTiles t = weight_tiles(g, sizeof(T));
    const dim3 grid(static_cast<unsigned>(ceil_div(g.Kg, t.kb) * ceil_div(g.Cg, t.cb)), static_cast<unsigned>(g.groups));
    launch(direct_backward_weights_v2<T>, grid, dim3(static_cast<unsigned>(weight_threads(t, g))),
           weight_shared_bytes(t, sizeof(T)), nullptr, g, t, xt, dyt, dwt);
  });
}

}  // namespace convkit::CK_GPU_NS
