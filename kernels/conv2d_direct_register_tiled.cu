// conv2d_direct v3: an outer-product register tile (docs/gpu/conv2d_direct.md, "v3").
//
// What it fixes over v2. A v2 thread owns one output pixel for 8 channels:
// per tap it reads one patch value and 8 weights from shared memory, one by
// one, for 8 multiply-adds (9 shared loads per 8 FMAs), so it is bound by the
// shared-memory pipe. A v3 thread owns 4 pixels x 8 output channels (32
// accumulators): per tap it reads 4 patch values and the 8 weights as 16-byte
// vector loads (2 for float, 4 for double), 6 loads for 32 FMAs in float32.
// Its pixel tile is a run of 32, 64 or 128 consecutive output pixels of one
// image in row-major order, chosen per shape, rather than v2's 8x16
// rectangle; on a 13x13 output that computes 1.14x the needed products, not 1.51x.
//
// Index tables instead of divisions. Where each staged patch element comes from
// (its offset in an input plane, or -1 in the padding) is computed once per
// block into shared memory; each chunk's staging then reads the table, with no
// division per element. Each thread computes its 4 pixels' offsets into the
// patch once, into registers; the inner loop walks the taps by adding to them.
//
// Backward-data at stride 1 is the forward of the flipped, transposed problem
// (conv/correlation.h, backward_data_correlation): input dy, output dx, filter
// tap(c, k, r, s) = w[k][c][R-1-r][S-1-s] within a group, padding
// (R-1) dh - pad. The same kernel runs it with kFlipped, which changes only
// how the filters are staged. At stride > 1 backward-data keeps v2's gather.
//
// Backward-weights has its own kernel, the same register tile turned around:
// a thread owns 8 filters x 4 entries (c, r, s) of dw and sums over every
// output pixel, reading 8 dy values as 16-byte loads and 4 patch values per
// pixel (direct_v3_backward_weights below). In v3, as in v2, one block walks
// every pixel of every image, so a small filter bank leaves most of a GPU
// idle: cifar10-cnn's first layer (32 filters of 3 channels) is one block,
// and took 47 ms on an H200 where cuDNN took 0.14.
//
// Version 4 is v3 with backward-weights split over the pixels: slice z of
// grid.z walks its own run of (image, pixel tile) units and writes its
// partial dw to a workspace, and sum_slices (im2col.cu) adds the slices in
// slice order, so the result is the same on every run. Slices are added until
// the blocks reach two per SM (kTwoBlocksPerSm), each slice keeps at least
// kMinUnitsPerSlice units, and the partials fit the workspace limit. With one
// slice it is v3, bit for bit.
//
// Floors: those of conv2d_direct.cu's head. Limits (direct_register_tiled_*_cannot;
// the launchers then run v2's kernels): the staged patch spans whole output
// rows (patch_w = (Q-1) sw + (S-1) dw + 1), so one channel's patch must fit
// in 48 KiB; H*W and P*Q must fit in int; grid.y and grid.z stay within
// 65535; backward-weights takes filters of at most 256 taps (16x16).
#include <algorithm>
#include <climits>
#include <string>

#include "kernels/conv2d_direct_register_tiled.cuh"
#include "kernels/device_math.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/im2col.cuh"
#include "kernels/tensor_view.cuh"
#include "kernels/vector_access.cuh"

namespace convkit::CK_GPU_NS {

namespace {

using std::int64_t;

constexpr int kPixelsPerThread = 4;
constexpr int kChannelsPerThread = 8;
// Channel groups of 8 per block at most, and the largest pixel tile.
constexpr int kMaxChannelGroups = 4;
constexpr int kMaxPixels = 128;
constexpr int kMaxThreads = kMaxPixels / kPixelsPerThread * kMaxChannelGroups;
constexpr std::size_t kMaxSharedBytes = 48 * 1024;
constexpr int kMaxGridYZ = 65535;

__host__ __device__ __forceinline__ int ceil_div(int a, int b) { return (a + b - 1) / b; }

// One launch's tiles, computed on the host. Element offsets are in T.
struct RegisterTiles {
  int pixels;            // output pixels per block: 32, 64 or 128
  int channel_groups;    // groups of 8 output channels per block: 1 to 4
  int chunk;             // input channels staged per step
  int patch_h, patch_w;  // staged input patch per channel (its largest extent)
  int filt_offset;       // filt [chunk][R][S][filt_stride], 16-byte aligned
  int filt_stride;       // 8 * channel_groups + 4: see the filter staging
  int table_offset;      // source [patch_h * patch_w] ints, after filt
};

// Backward-weights' tiles. Element offsets are in T.
struct WeightTiles {
  int pixels;            // output pixels per step: 32, 64 or 128
  int channel_groups;    // groups of 8 filters per block: 1 to 4
  int cb;                // input channels per block: its entries are cb x R x S
  int entry_lanes;       // threads per channel group: ceil(cb R S / 4)
  int patch_h, patch_w;  // staged input patch per channel (its largest extent)
  int dy_stride;         // 8 * channel_groups + 4
  int patch_offset;      // patch [cb][patch_h][patch_w], after dyt [pixels][dy_stride]
  int table_offset;      // source [patch_h * patch_w] and pixel [pixels] ints, after patch
};
constexpr int kEntriesPerThread = 4;
// Entries per block at most: 64 threads per channel group.
constexpr int kMaxEntries = 256;
constexpr int kMaxWeightThreads = kMaxEntries / kEntriesPerThread * kMaxChannelGroups;
// v4's split: a slice walks at least this many (image, pixel tile) units, so
// that its staging and its partial's write stay small next to its sums.
constexpr int64_t kMinUnitsPerSlice = 4;

// Block = (pixel tile, 8 * channel_groups output channels of one group,
// image); thread = (lane, channel group kt): pixels lane + i * lanes (i < 4),
// so a warp's patch reads are consecutive pixels, and channels kt*8 .. kt*8+7,
// the same 8 weights for every lane of the group (a broadcast). Where it can,
// a warp takes 16 pixels of two channel groups rather than 32 pixels of one:
// 32 consecutive pixels of a narrow plane wrap rows, and the halo of each wrap
// ((S-1) dw words) stretches their patch reads over more than 32 banks.
template <typename T, bool kFlipped>
__global__ void __launch_bounds__(kMaxThreads)
    direct_v3_register_tiled(ConvGeometry g, RegisterTiles t, const T* in, const T* w, const T* b, T* out) {
  CK_DYNAMIC_SHARED(T, smem);
  T* patch = smem;
  T* filt = smem + t.filt_offset;
  int* source = reinterpret_cast<int*>(smem + t.table_offset);
  const int patch_size = t.patch_h * t.patch_w, taps = g.R * g.S;
  const int block_channels = t.channel_groups * kChannelsPerThread;
  const int plane = g.P * g.Q;
  const int pix0 = static_cast<int>(blockIdx.x) * t.pixels;
  const int kblocks = ceil_div(g.Kg, block_channels);
  const int group = static_cast<int>(blockIdx.y) / kblocks;
  const int k0 = static_cast<int>(blockIdx.y) % kblocks * block_channels;  // within the group
  const int n = static_cast<int>(blockIdx.z);
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  const int lanes = t.pixels / kPixelsPerThread;
  int lane = tid % lanes, kt = tid / lanes;
  if (lanes % 16 == 0) {
    const int half_warp = tid / 16;
    kt = half_warp % t.channel_groups;
    lane = half_warp / t.channel_groups * 16 + tid % 16;
  }

  // The output rows this tile touches, and the input rows under them.
  const int p_first = pix0 / g.Q, p_last = (min(pix0 + t.pixels, plane) - 1) / g.Q;
  const int staged = ((p_last - p_first) * g.stride_h + (g.R - 1) * g.dilation_h + 1) * t.patch_w;
  const int h_origin = p_first * g.stride_h - g.pad_top;
  for (int e = tid; e < staged; e += threads) {
    const int h = h_origin + e / t.patch_w, col = e % t.patch_w - g.pad_left;
    source[e] = h >= 0 && h < g.H && col >= 0 && col < g.W ? h * g.W + col : -1;
  }
  // Pixels past the plane repeat its last pixel (in the tile's last row) and
  // are not stored.
  int pixel_offset[kPixelsPerThread];
  CK_UNROLL for (int i = 0; i < kPixelsPerThread; ++i) {
    const int pix = min(pix0 + lane + i * lanes, plane - 1);
    pixel_offset[i] = (pix / g.Q - p_first) * g.stride_h * t.patch_w + pix % g.Q * g.stride_w;
  }

  const int64_t in_plane = static_cast<int64_t>(g.H) * g.W;
  const T* in_group = in + (static_cast<int64_t>(n) * g.C + static_cast<int64_t>(group) * g.Cg) * in_plane;
  const T* w_group = w + static_cast<int64_t>(group) * g.Kg * g.Cg * taps;
  const int chunk_taps = t.chunk * taps;
  T acc[kPixelsPerThread][kChannelsPerThread];
  CK_UNROLL for (int i = 0; i < kPixelsPerThread; ++i) {
    CK_UNROLL for (int j = 0; j < kChannelsPerThread; ++j) acc[i][j] = T(0);
  }
  for (int c0 = 0; c0 < g.Cg; c0 += t.chunk) {
    __syncthreads();  // the table is written; the previous chunk's tiles are read
    for (int cl = 0; cl < t.chunk; ++cl) {
      T* dst = patch + cl * patch_size;
      if (c0 + cl < g.Cg) {
        const T* src = in_group + static_cast<int64_t>(c0 + cl) * in_plane;
        for (int e = tid; e < staged; e += threads) {
          const int offset = source[e];
          dst[e] = offset >= 0 ? src[offset] : T(0);
        }
      } else {
        for (int e = tid; e < staged; e += threads) dst[e] = T(0);
      }
    }
    // A warp stages 8 consecutive (c, r, s) of 4 filters: in global memory 4
    // runs of 8 words (a filter's (c, r, s) are contiguous; the flipped ones
    // descend), in shared memory 32 distinct banks, because the row stride
    // block_channels + 4 puts consecutive rows 4 banks apart. Channel-fastest
    // rows are what lets the inner loop read 8 weights as two 16-byte loads.
    const int filter_quads = block_channels / 4;
    for (int i = tid; i < block_channels * ceil_div(chunk_taps, 8) * 8; i += threads) {
      const int quad = i / 32;
      const int kl = quad % filter_quads * 4 + i % 4, rem = quad / filter_quads * 8 + i / 4 % 8;
      if (rem >= chunk_taps) continue;
      T v = T(0);
      if (k0 + kl < g.Kg && c0 * taps + rem < g.Cg * taps) {
        if constexpr (kFlipped) {
          const int cl = rem / taps, tap = rem - cl * taps;
          v = w_group[(static_cast<int64_t>(c0 + cl) * g.Kg + k0 + kl) * taps + (taps - 1 - tap)];
        } else {
          v = w_group[(static_cast<int64_t>(k0 + kl) * g.Cg + c0) * taps + rem];
        }
      }
      filt[rem * t.filt_stride + kl] = v;
    }
    __syncthreads();
    for (int cl = 0; cl < t.chunk; ++cl) {
      const T* patch_channel = patch + cl * patch_size;
      const T* filt_channel = filt + cl * taps * t.filt_stride + kt * kChannelsPerThread;
      for (int r = 0; r < g.R; ++r) {
        const T* patch_row = patch_channel + r * g.dilation_h * t.patch_w;
        const T* filt_row = filt_channel + r * g.S * t.filt_stride;
        for (int s = 0; s < g.S; ++s) {
          T wv[kChannelsPerThread];
          CK_UNROLL for (int j = 0; j < kChannelsPerThread; j += dev::kVec16<T>)
            dev::load16(filt_row + s * t.filt_stride + j, wv + j);
          const T* patch_tap = patch_row + s * g.dilation_w;
          T xv[kPixelsPerThread];
          CK_UNROLL for (int i = 0; i < kPixelsPerThread; ++i) xv[i] = patch_tap[pixel_offset[i]];
          CK_UNROLL for (int i = 0; i < kPixelsPerThread; ++i) {
            CK_UNROLL for (int j = 0; j < kChannelsPerThread; ++j) acc[i][j] = dev::fma(xv[i], wv[j], acc[i][j]);
          }
        }
      }
    }
  }
  // Consecutive lanes store consecutive pixels of one channel plane: coalesced.
  CK_UNROLL for (int i = 0; i < kPixelsPerThread; ++i) {
    const int pix = pix0 + lane + i * lanes;
    if (pix >= plane) continue;
    CK_UNROLL for (int j = 0; j < kChannelsPerThread; ++j) {
      const int k = k0 + kt * kChannelsPerThread + j;
      if (k >= g.Kg) continue;
      const int channel = group * g.Kg + k;
      out[(static_cast<int64_t>(n) * g.K + channel) * plane + pix] = acc[i][j] + (b != nullptr ? b[channel] : T(0));
    }
  }
}

// Backward-weights: dw[k][c][r][s] = sum over n, p, q of dy[n][k][p][q] *
// x[n][c][p sh - pt + r dh][q sw - pl + s dw], a product whose rows are the
// filters, whose columns are the entries (c, r, s) and whose sum runs over
// every output pixel. Block = (8 * channel_groups filters, cb input channels
// x R x S entries, group); thread = 8 filters x 4 entries (entries lane +
// i * entry_lanes), 32 sums in registers. The block walks every pixel tile of
// every image, staging
//   dyt    [pixels][dy_stride]    dy of its filters, filter-fastest
//   patch  [cb][patch_h][patch_w] the input under the tile (through the table)
//   source [patch_h * patch_w]    the index table, per tile
//   pixel  [pixels]               each tile pixel's offset into a channel's patch
// Per pixel a thread reads 8 dy values as 16-byte loads, the pixel's offset
// (a broadcast) and 4 patch values at offsets fixed per thread, for 32 FMAs.
// The sums stay in registers across all tiles and dw is written once.
// Slice z = blockIdx.z takes units [z * units_per_slice, (z + 1) *
// units_per_slice) of the N * tiles (image, pixel tile) units, image-major,
// and writes its sums at dw + z * slice_stride.
template <typename T>
__global__ void __launch_bounds__(kMaxWeightThreads)
    direct_v3_backward_weights(ConvGeometry g, WeightTiles t, const T* x, const T* dy, T* dw,
                               int64_t units_per_slice, int64_t slice_stride) {
  CK_DYNAMIC_SHARED(T, smem);
  T* dyt = smem;
  T* patch = smem + t.patch_offset;
  int* source = reinterpret_cast<int*>(smem + t.table_offset);
  int* pixel = source + t.patch_h * t.patch_w;
  const int patch_size = t.patch_h * t.patch_w, taps = g.R * g.S;
  const int block_channels = t.channel_groups * kChannelsPerThread;
  const int plane = g.P * g.Q, entries = t.cb * taps;
  const int cblocks = ceil_div(g.Cg, t.cb);
  const int k0 = static_cast<int>(blockIdx.x) / cblocks * block_channels;  // within the group
  const int c0 = static_cast<int>(blockIdx.x) % cblocks * t.cb;
  const int group = static_cast<int>(blockIdx.y);
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  const int lane = tid % t.entry_lanes, kt = tid / t.entry_lanes;

  // This thread's entries' offsets into the patch (entries past the block's
  // end read entry 0 and are not stored).
  int entry_offset[kEntriesPerThread];
  CK_UNROLL for (int i = 0; i < kEntriesPerThread; ++i) {
    const int e = lane + i * t.entry_lanes < entries ? lane + i * t.entry_lanes : 0;
    const int cl = e / taps, tap = e % taps;
    entry_offset[i] = cl * patch_size + tap / g.S * g.dilation_h * t.patch_w + tap % g.S * g.dilation_w;
  }
  T acc[kChannelsPerThread][kEntriesPerThread];
  CK_UNROLL for (int j = 0; j < kChannelsPerThread; ++j) {
    CK_UNROLL for (int i = 0; i < kEntriesPerThread; ++i) acc[j][i] = T(0);
  }

  const int64_t in_plane = static_cast<int64_t>(g.H) * g.W;
  const int filter_quads = block_channels / 4;
  const int tiles = ceil_div(plane, t.pixels);
  const int64_t unit_first = blockIdx.z * units_per_slice;
  const int64_t units = static_cast<int64_t>(g.N) * tiles;
  const int64_t unit_end = unit_first + units_per_slice < units ? unit_first + units_per_slice : units;
  // The units are image-major: step (n, tile) along with them, one division in all.
  int n = static_cast<int>(unit_first / tiles), tile = static_cast<int>(unit_first % tiles);
  for (int64_t unit = unit_first; unit < unit_end; ++unit) {
    const T* x_block = x + (static_cast<int64_t>(n) * g.C + static_cast<int64_t>(group) * g.Cg + c0) * in_plane;
    const T* dy_block = dy + (static_cast<int64_t>(n) * g.K + static_cast<int64_t>(group) * g.Kg + k0) * plane;
    const int pix0 = tile * t.pixels, count = min(t.pixels, plane - pix0);
    const int p_first = pix0 / g.Q, p_last = (pix0 + count - 1) / g.Q;
    const int staged = ((p_last - p_first) * g.stride_h + (g.R - 1) * g.dilation_h + 1) * t.patch_w;
    const int h_origin = p_first * g.stride_h - g.pad_top;
    __syncthreads();  // the previous tile's reads are done
    for (int e = tid; e < staged; e += threads) {
      const int h = h_origin + e / t.patch_w, col = e % t.patch_w - g.pad_left;
      source[e] = h >= 0 && h < g.H && col >= 0 && col < g.W ? h * g.W + col : -1;
    }
    for (int j = tid; j < count; j += threads) {
      const int pix = pix0 + j;
      pixel[j] = (pix / g.Q - p_first) * g.stride_h * t.patch_w + pix % g.Q * g.stride_w;
    }
    // As the forward's filters: a warp stages 8 pixels of 4 filters, 4 runs
    // of 8 words in global memory, 32 distinct banks in shared memory.
    for (int i = tid; i < block_channels * t.pixels; i += threads) {
      const int quad = i / 32;
      const int kl = quad % filter_quads * 4 + i % 4, j = quad / filter_quads * 8 + i / 4 % 8;
      dyt[j * t.dy_stride + kl] =
          k0 + kl < g.Kg && j < count ? dy_block[static_cast<int64_t>(kl) * plane + pix0 + j] : T(0);
    }
    __syncthreads();  // the table is written
    for (int cl = 0; cl < t.cb; ++cl) {
      T* dst = patch + cl * patch_size;
      if (c0 + cl < g.Cg) {
        const T* src = x_block + static_cast<int64_t>(cl) * in_plane;
        for (int e = tid; e < staged; e += threads) {
          const int offset = source[e];
          dst[e] = offset >= 0 ? src[offset] : T(0);
        }
      } else {
        for (int e = tid; e < staged; e += threads) dst[e] = T(0);
      }
    }
    __syncthreads();
    for (int j = 0; j < count; ++j) {
      T dv[kChannelsPerThread];
      CK_UNROLL for (int jj = 0; jj < kChannelsPerThread; jj += dev::kVec16<T>)
        dev::load16(dyt + j * t.dy_stride + kt * kChannelsPerThread + jj, dv + jj);
      const T* patch_pixel = patch + pixel[j];
      T xv[kEntriesPerThread];
      CK_UNROLL for (int i = 0; i < kEntriesPerThread; ++i) xv[i] = patch_pixel[entry_offset[i]];
      CK_UNROLL for (int jj = 0; jj < kChannelsPerThread; ++jj) {
        CK_UNROLL for (int i = 0; i < kEntriesPerThread; ++i) acc[jj][i] = dev::fma(dv[jj], xv[i], acc[jj][i]);
      }
    }
    if (++tile == tiles) tile = 0, ++n;
  }
  // Consecutive lanes store consecutive entries of one filter: coalesced.
  T* dw_slice = dw + blockIdx.z * slice_stride;
  CK_UNROLL for (int jj = 0; jj < kChannelsPerThread; ++jj) {
    const int k = k0 + kt * kChannelsPerThread + jj;
    if (k >= g.Kg) continue;
    CK_UNROLL for (int i = 0; i < kEntriesPerThread; ++i) {
      const int e = lane + i * t.entry_lanes;
      if (e < entries && c0 * taps + e < g.Cg * taps)
        dw_slice[(static_cast<int64_t>(group * g.Kg + k) * g.Cg + c0) * taps + e] = acc[jj][i];
    }
  }
}

// ------------------------------ host side ------------------------------

std::size_t shared_bytes(const RegisterTiles& t, std::size_t elem) {
  return static_cast<std::size_t>(t.table_offset) * elem +
         static_cast<std::size_t>(t.patch_h) * t.patch_w * sizeof(int);
}

// The pixel tile with the least padding over the plane (ties: the larger).
int pixel_tile(int64_t plane) {
  int best = kMaxPixels;
  for (int pixels = kMaxPixels; pixels >= 32; pixels /= 2)
    if ((plane + pixels - 1) / pixels * pixels < (plane + best - 1) / best * best) best = pixels;
  return best;
}

// The input patch of one channel under `pixels` consecutive output pixels
// starting anywhere in a row; false when it alone exceeds the shared memory.
bool patch_extent(const ConvGeometry& g, int pixels, std::size_t elem, int* patch_h, int* patch_w) {
  const int rows = std::min(g.P, (pixels - 1) / g.Q + 2);
  const int64_t h = static_cast<int64_t>(rows - 1) * g.stride_h + static_cast<int64_t>(g.R - 1) * g.dilation_h + 1;
  const int64_t w = static_cast<int64_t>(g.Q - 1) * g.stride_w + static_cast<int64_t>(g.S - 1) * g.dilation_w + 1;
  if (h * w * static_cast<int64_t>(elem) > static_cast<int64_t>(kMaxSharedBytes)) return false;
  *patch_h = static_cast<int>(h);
  *patch_w = static_cast<int>(w);
  return true;
}

// The largest channel chunk (8, 4, 2 or 1) whose tiles fit; chunk 0 when none does.
RegisterTiles register_tiles(const ConvGeometry& g, std::size_t elem) {
  RegisterTiles t{};
  t.pixels = pixel_tile(static_cast<int64_t>(g.P) * g.Q);
  t.channel_groups = std::min(kMaxChannelGroups, ceil_div(g.Kg, kChannelsPerThread));
  if (!patch_extent(g, t.pixels, elem, &t.patch_h, &t.patch_w)) return t;
  const int vec = static_cast<int>(16 / elem);
  t.filt_stride = t.channel_groups * kChannelsPerThread + 4;
  for (int chunk = 8; chunk >= 1; chunk /= 2) {
    t.chunk = chunk;
    t.filt_offset = ceil_div(chunk * t.patch_h * t.patch_w, vec) * vec;
    t.table_offset = t.filt_offset + chunk * g.R * g.S * t.filt_stride;
    if (shared_bytes(t, elem) <= kMaxSharedBytes) return t;
  }
  t.chunk = 0;
  return t;
}

std::size_t weight_shared_bytes(const WeightTiles& t, std::size_t elem) {
  return static_cast<std::size_t>(t.table_offset) * elem +
         (static_cast<std::size_t>(t.patch_h) * t.patch_w + static_cast<std::size_t>(t.pixels)) * sizeof(int);
}

// The block's input channels: the most (up to 32) whose entries fit in 128
// (one entry per 4 threads, so at most 32 threads per channel group), fewer
// when the tiles would not fit; a filter of more than 128 taps takes one
// channel (up to 256 taps). cb 0 when nothing fits.
WeightTiles weight_tiles(const ConvGeometry& g, std::size_t elem) {
  WeightTiles t{};
  const int taps = g.R * g.S;
  t.pixels = pixel_tile(static_cast<int64_t>(g.P) * g.Q);
  t.channel_groups = std::min(kMaxChannelGroups, ceil_div(g.Kg, kChannelsPerThread));
  t.dy_stride = t.channel_groups * kChannelsPerThread + 4;
  if (taps > kMaxEntries || !patch_extent(g, t.pixels, elem, &t.patch_h, &t.patch_w)) return t;
  t.patch_offset = t.pixels * t.dy_stride;
  for (int cb = 32; cb >= 1; cb /= 2) {
    if (cb > 1 && (cb * taps > kMaxEntries / 2 || cb / 2 >= g.Cg)) continue;
    t.cb = cb;
    t.entry_lanes = ceil_div(cb * taps, kEntriesPerThread);
    t.table_offset = t.patch_offset + cb * t.patch_h * t.patch_w;
    if (weight_shared_bytes(t, elem) <= kMaxSharedBytes) return t;
  }
  t.cb = 0;
  return t;
}

std::string forward_cannot(const ConvGeometry& g, DType dtype, const char* pass) {
  if (!is_floating(dtype)) return detail::concat("conv2d_direct v3: dtype ", dtype, " is not supported");
  if (static_cast<int64_t>(g.H) * g.W > INT_MAX || static_cast<int64_t>(g.P) * g.Q > INT_MAX)
    return detail::concat("conv2d_direct v3 ", pass, ": an image plane exceeds 2^31 - 1 elements");
  const int block_channels = std::min(kMaxChannelGroups, ceil_div(g.Kg, kChannelsPerThread)) * kChannelsPerThread;
  if (g.N > kMaxGridYZ || static_cast<int64_t>(g.groups) * ceil_div(g.Kg, block_channels) > kMaxGridYZ)
    return detail::concat("conv2d_direct v3 ", pass, ": grid.y/z would exceed ", kMaxGridYZ, " (N = ", g.N,
                          ", groups = ", g.groups, ")");
  if (register_tiles(g, dtype_size(dtype)).chunk == 0)
    return detail::concat("conv2d_direct v3 ", pass, ": the input patch of one channel under a tile of whole output rows (",
                          g.Q, " wide) exceeds ", kMaxSharedBytes, " bytes of shared memory");
  return {};
}

// conv::backward_data_correlation in ConvGeometry's terms: dx as the stride-1
// forward of dy with the flipped filters transposed within each group.
ConvGeometry flipped_problem(const ConvGeometry& g) {
  ConvGeometry f = g;
  f.C = g.K, f.H = g.P, f.W = g.Q;
  f.K = g.C, f.P = g.H, f.Q = g.W;
  f.Cg = g.Kg, f.Kg = g.Cg;
  f.stride_h = f.stride_w = 1;
  f.pad_top = (g.R - 1) * g.dilation_h - g.pad_top;
  f.pad_left = (g.S - 1) * g.dilation_w - g.pad_left;
  return f;
}

std::string weights_cannot(const ConvGeometry& g, DType dtype) {
  if (!is_floating(dtype)) return detail::concat("conv2d_direct v3: dtype ", dtype, " is not supported");
  if (static_cast<int64_t>(g.H) * g.W > INT_MAX || static_cast<int64_t>(g.P) * g.Q > INT_MAX)
    return "conv2d_direct v3 backward-weights: an image plane exceeds 2^31 - 1 elements";
  if (g.R * g.S > kMaxEntries)
    return detail::concat("conv2d_direct v3 backward-weights: a ", g.R, "x", g.S, " filter has more than ", kMaxEntries,
                          " taps (one block holds at most ", kMaxEntries, " entries)");
  if (g.groups > kMaxGridYZ)
    return detail::concat("conv2d_direct v3 backward-weights: grid.y would exceed ", kMaxGridYZ, " (groups = ",
                          g.groups, ")");
  if (weight_tiles(g, dtype_size(dtype)).cb == 0)
    return detail::concat("conv2d_direct v3 backward-weights: the input patch of one channel under a tile of whole "
                          "output rows (", g.Q, " wide) exceeds ", kMaxSharedBytes, " bytes of shared memory");
  return {};
}

template <bool kFlipped>
void launch_register_tiled(DType dtype, const ConvGeometry& g, const void* in, const void* w, const void* b,
                           void* out) {
  dispatch_floating(dtype, "conv2d_direct v3", [&](auto tag) {
    using T = decltype(tag);
    const RegisterTiles t = register_tiles(g, sizeof(T));
    const int block_channels = t.channel_groups * kChannelsPerThread;
    const dim3 grid(static_cast<unsigned>(ceil_div(g.P * g.Q, t.pixels)),
                    static_cast<unsigned>(g.groups * ceil_div(g.Kg, block_channels)), static_cast<unsigned>(g.N));
    const int threads = t.pixels / kPixelsPerThread * t.channel_groups;
    // More than __launch_bounds__ promised would fail the launch on a GPU.
    CK_CHECK(threads <= kMaxThreads, "conv2d_direct v3: ", threads, " threads per block");
    const dim3 block(static_cast<unsigned>(threads));
    launch(direct_v3_register_tiled<T, kFlipped>, grid, block, shared_bytes(t, sizeof(T)), nullptr, g, t,
           static_cast<const T*>(in), static_cast<const T*>(w), static_cast<const T*>(b), static_cast<T*>(out));
  });
}

}  // namespace

std::string direct_register_tiled_backward_weights_cannot(const ConvGeometry& g, DType dtype) {
  return weights_cannot(g, dtype);
}

DirectWeightSplit direct_weight_split(const ConvGeometry& g, DType dtype, std::size_t workspace_limit) {
  DirectWeightSplit split;
  if (!weights_cannot(g, dtype).empty()) return split;  // v2's kernel runs
  const WeightTiles t = weight_tiles(g, dtype_size(dtype));
  const int64_t units = static_cast<int64_t>(g.N) * ceil_div(g.P * g.Q, t.pixels);
  split.units_per_slice = units;
  const int64_t blocks = static_cast<int64_t>(ceil_div(g.Kg, t.channel_groups * kChannelsPerThread)) *
                         ceil_div(g.Cg, t.cb) * g.groups;
  const std::size_t per_slice = static_cast<std::size_t>(g.K) * g.Cg * g.R * g.S * dtype_size(dtype);
  int64_t slices = std::min<int64_t>({(kTwoBlocksPerSm + blocks - 1) / blocks, units / kMinUnitsPerSlice,
                                      static_cast<int64_t>(kMaxGridYZ)});
  while (slices > 1 && static_cast<std::size_t>(slices) * per_slice > workspace_limit) --slices;
  if (slices <= 1) return split;
  const int64_t per = (units + slices - 1) / slices;
  split.units_per_slice = per;
  split.slices = static_cast<int>((units + per - 1) / per);  // no empty slice
  return split;
}

void launch_direct_register_tiled_backward_weights(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                                                   void* dw, const DirectWeightSplit& split, void* workspace) {
  const std::string why = weights_cannot(g, dtype);
  CK_CHECK(why.empty(), why);
  CK_CHECK(split.slices == 1 || workspace != nullptr, "conv2d_direct v4 backward_weights: ", split.slices,
           " slices need a workspace (conv2d_direct_weights_workspace_bytes)");
  dispatch_floating(dtype, "conv2d_direct v3 backward_weights", [&](auto tag) {
    using T = decltype(tag);
    const WeightTiles t = weight_tiles(g, sizeof(T));
    const int block_channels = t.channel_groups * kChannelsPerThread;
    const dim3 grid(static_cast<unsigned>(ceil_div(g.Kg, block_channels) * ceil_div(g.Cg, t.cb)),
                    static_cast<unsigned>(g.groups), static_cast<unsigned>(split.slices));
    const int threads = t.entry_lanes * t.channel_groups;
    CK_CHECK(threads <= kMaxWeightThreads, "conv2d_direct v3 backward_weights: ", threads, " threads per block");
    const int64_t dw_elems = static_cast<int64_t>(g.K) * g.Cg * g.R * g.S;
    T* out = split.slices > 1 ? static_cast<T*>(workspace) : static_cast<T*>(dw);
    launch(direct_v3_backward_weights<T>, grid, dim3(static_cast<unsigned>(threads)),
           weight_shared_bytes(t, sizeof(T)), nullptr, g, t, static_cast<const T*>(x), static_cast<const T*>(dy), out,
           split.units_per_slice, split.slices > 1 ? dw_elems : int64_t{0});
    if (split.slices > 1) launch_sum_slices(dtype, workspace, split.slices, dw_elems, dw);
  });
}

std::string direct_register_tiled_forward_cannot(const ConvGeometry& g, DType dtype) {
  return forward_cannot(g, dtype, "forward");
}

std::string direct_register_tiled_backward_data_cannot(const ConvGeometry& g, DType dtype) {
  if (g.stride_h != 1 || g.stride_w != 1)
    return detail::concat("conv2d_direct v3 backward-data: stride ", g.stride_h, "x", g.stride_w,
                          " (v3 runs backward-data as a stride-1 forward)");
  return forward_cannot(flipped_problem(g), dtype, "backward-data");
}

void launch_direct_register_tiled_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                                          const void* b, void* y) {
  const std::string why = direct_register_tiled_forward_cannot(g, dtype);
  CK_CHECK(why.empty(), why);
  launch_register_tiled<false>(dtype, g, x, w, b, y);
}

void launch_direct_register_tiled_backward_data(DType dtype, const ConvGeometry& g, const void* dy, const void* w,
                                                void* dx) {
  const std::string why = direct_register_tiled_backward_data_cannot(g, dtype);
  CK_CHECK(why.empty(), why);
  launch_register_tiled<true>(dtype, flipped_problem(g), dy, w, nullptr, dx);
}

}  // namespace convkit::CK_GPU_NS
