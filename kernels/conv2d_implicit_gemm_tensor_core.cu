// Tensor-core implicit-GEMM convolution: the products of
// conv2d_implicit_gemm.cu (the same table, the same problems, gathered from
// x, w or dy by conv2d_implicit_gemm_problem.cuh) with the operands rounded to
// tf32 and multiplied by mma.sync m16n8k8, or rounded to bf16 and multiplied
// by m16n8k16 (kernels/tensor_core.cuh; the fragment layouts are in
// convkit/sim/mma.h). Both precisions share every layout in 32-bit words: a
// word is one tf32 element or two bf16 elements adjacent along k, so a bf16
// k-step covers 16 elements where tf32's covers 8, and a staged tile of 32
// words 64 elements where tf32's holds 32 (each bf16 word costs two gathers).
// The contract is in conv2d_implicit_gemm_tensor_core.cuh.
//
// Accuracy, as gemm_tensor_core.cu: each product of two rounded operands is
// off by at most 2u relative (u = 2^-11 for tf32, 2^-8 for bf16), the float32
// sum adds its usual gamma_K, so an output is within
// sum|a||b| * (2u + u^2 + (K+2) * 2^-24) of the exact sum. Tests hold every
// pass to that bound against float64, in both precisions.
//
// The floor is conv2d_implicit_gemm.cu's (same FLOPs, same bytes). The
// tensor cores move the compute roof (H100 SXM: 495 dense TF32 TFLOP/s
// against 67 FP32), so the ridge point rises to ~150 flop/B of HBM traffic:
// cifar10-cnn conv4's ~480 flop/B stays compute-bound in principle, but only
// a kernel that keeps the tensor cores fed from shared memory gets there.
//
// v1 warp per tile: one warp per 16x8 tile of the product. For each k-step
// of 8 every lane gathers the 4 A and 2 B elements of its fragments through
// the problem's a() and b() (every index decoded with divisions), rounds
// them (cvt.rna) and the warp issues one mma. Each element is gathered by
// every warp that needs it: N/8 times for A, M/16 for B. Obviously right;
// version 2 is tested against it.
// v2 tiled: version 3's block (64 x 64 outputs, K 32 at a time, 256 threads)
//    and its gathering loaders, with mma.sync in place of the 4x4 FMA tiles.
//    - Warp tiling: 8 warps, 2 along M by 4 along N, each a 32 x 16 tile:
//      2 x 2 mma tiles of 16x8, 16 accumulators per lane. 8 warps, not 4 of
//      32 x 32, because the gathering loaders are the expensive part (index
//      decoding per element): 256 threads share a tile's 4096 gathers, 16
//      each, as in version 3, and hide one another's latency. The price is
//      12 fragment words per 4 mmas instead of 16 per 8.
//    - Rounding: each element is converted once, by the loader that stages
//      it, and shared memory holds tf32 bit patterns (uint32).
//    - Shared layouts, chosen so that the loaders' stores and the fragment
//      reads both fall in 32 distinct banks (bank = word mod 32):
//        As[m][k], rows of 36 words. The A loader's lanes walk k: a warp
//        stores 32 consecutive words of one row. Fragment a0 of lane
//        (group, tig) is word 36*group + tig: bank 4*group + tig, all 32
//        distinct (a1..a3 add 8 rows or 4 words: the same set shifted).
//        B along k (backward-weights: the loader's lanes walk k): Bs[col][k],
//        rows of 36: the same arithmetic, b0 = (k = tig, n = group) is word
//        36*group + tig.
//        B along the columns (forward, backward-data: lanes walk output
//        positions): Bs[k][col], rows of 72 words. A warp stores 32
//        consecutive columns of one row; b0 is word 72*tig + group: bank
//        8*tig + group, all 32 distinct (b1, 4 rows on, adds 288 = 0 mod 32).
//        The output tile, Cs[m][col], rows of 72 words (36 KB of shared
//        memory in all, under the 48 KB of static shared memory). Lane
//        (group, tig) stores c_i at row group (+8), column 2*tig + (i & 1):
//        bank 8*group + 2*tig + (i & 1), so groups g and g+4 would share
//        banks; a swizzle (c_column) flips the column's low bit on rows with
//        bit 2 set, sending them to the odd banks when the others take the
//        even ones. The read-out walks 32 consecutive columns of one row.
//      The sim profiler's bank-conflict counter confirms zero conflict
//      wavefronts on every pass (docs/results/sim-profile/).
//    - Epilogue: the mma fragments scatter a lane's outputs over 2 rows and
//      4 column pairs, which stored straight to global memory touch ~14
//      sectors per request for 4 useful (v1 does that). Staged through Cs,
//      each warp stores 32 consecutive output columns: consecutive positions
//      of one image (forward, backward-data at stride 1) or of one dw row.
//    - Per K-step the block loads 2 * 64 * 32 elements for 2 * 64 * 64 * 32
//      flops: 16 flop/B, version 3's, now far under the tensor cores' ridge,
//      so the loaders' gathers, not the mma, set the pace.
//    - Backward-data transposes the filter into the workspace when it fits,
//      and backward-weights splits K into version 3's slices, summed in slice
//      order by sum_slices: the same bits on every run.
//    Single-buffered, like version 3: a pipelined version (the next tile's
//    gathers in flight during the mmas) is the next step.
// v3 pipelined: what an H200 measured of v2 (docs/gpu/measured-h200.md):
//    slower than the strict FP32 implicit GEMM v5 on 17 of 18 passes of the
//    layer sets, so TF32 trained no faster than strict. v2 inherits version
//    3's costs, which v5 removed: five divisions per gathered element, no
//    pipeline, and a single buffer. v3 is v5 with the multiply swapped: the
//    same gathering loaders (a fixed coordinate per thread, the other
//    stepped by mixed-radix adds), the same 4-stage cp.async pipeline and the
//    same tiles (kernels/conv2d_implicit_gemm_pipelined.cuh), with each
//    warp's 32x32 (or 32x16) tile as 2 x 4 (2 x 2) mma tiles of 16x8
//    (pipelined::MmaMath). What changes with the precision:
//    - Stages hold float32 as gathered (a copy cannot convert); each fragment
//      word is rounded (tf32) or packed (two bf16) when a warp reads it.
//    - Stage depth: one mma k-step, 8 elements for tf32, 16 for bf16, so a
//      bf16 stage gathers twice a tf32 one.
//    - Row padding: the stages are k-major (As[k][m], Bs[k][col]); a tf32
//      fragment reads element (k = t, x = g), bank t * row + g, conflict-free
//      with rows of 8 mod 32 words (BM + 8); bf16 reads rows 2t and 2t + 1,
//      conflict-free at 4 mod 32 (BM + 4, version 5's own).
//    - Outputs: each lane's 4 accumulators per mma tile go through the
//      problem's store, as v1's do; no staging of the output tile.
//    Workspace, split-K slices and the descriptors it runs are version 5's.
//    Predicted, not measured: at least v5's strict speed on every pass (the
//    same loaders, with 8 mma per warp per stage in place of 256 FMA per
//    thread), and up to the tensor cores' gain where the loaders keep up.
// v4 channels-last: what the H200 measured of v3 (docs/gpu/measured-h200.md):
//    0.71-0.97x strict v5's time, but 1.4-3.1x cuDNN's tf32 on the stride-2
//    3x3 layers. Its loaders set the pace: nvcc's code for its tf32 64x64
//    tile spends 305 instructions per stage on 8 mma (38 per mma). Version 4
//    (kernels/conv2d_implicit_gemm_channels_last.cuh, launched from
//    conv2d_implicit_gemm.cu) copies the image to channels-last and the
//    filter to taps-major in the workspace, gathers 16 bytes (4 channels)
//    per cp.async into x-major swizzled stages of 16 k, rounds to tf32 in
//    the copies, and reads each fragment word at a row's constant offset
//    from a per-lane slot: 198 instructions per stage of 16 mma (12 per
//    mma) in tf32, 172 per 8 in bf16 (v3: 497 per 8). Backward-weights
//    copies x and dy both channels-last and gathers 4 channels of one
//    position per copy into v3's k-major stages: 220 instructions per 16 tf32
//    mma (v3: 274 per 8). Not the default until a GPU has timed it.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>

#include "convkit/backend/kernel_versions.h"
#include "kernels/conv2d_implicit_gemm.cuh"
#include "kernels/conv2d_implicit_gemm_problem.cuh"
#include "kernels/conv2d_implicit_gemm_tensor_core.cuh"
#include "kernels/im2col.cuh"
#include "kernels/tensor_core.cuh"
#include "kernels/tensor_view.cuh"

namespace convkit::CK_GPU_NS {

namespace {

using namespace implicit_gemm;

constexpr int kVersions = 5;
constexpr std::int64_t kMaxGridX = std::numeric_limits<int>::max();

// ---------------------------------------------------------------------------
// v1, one warp per 16x8 tile of group blockIdx.y.
constexpr int kWarpTileM = 16, kWarpTileN = 8;

// Word kw of row m of A (of column col of B) in the run of k from k0: one
// tf32 element or a bf16 pair along k (dev::word_of), zero past the product.
template <TensorCorePrecision P, class Problem>
__device__ __forceinline__ std::uint32_t a_word(const Problem& pb, int grp, int m, int k0, int kw, int k_end) {
  return dev::word_of<P>([&](int k) { return (m < pb.M && k < k_end) ? pb.a(grp, m, k) : 0.0f; }, k0, kw);
}
template <TensorCorePrecision P, class Problem>
__device__ __forceinline__ std::uint32_t b_word(const Problem& pb, int grp, int k0, int kw, int col, int k_end) {
  return dev::word_of<P>([&](int k) { return (col < pb.cols && k < k_end) ? pb.b(grp, k, col) : 0.0f; }, k0, kw);
}

// Lane `lane`'s accumulators of the 16x8 tile at (m0, n0): c_i at row
// group (+8 for i >= 2), column 2*tig + (i & 1).
template <class Problem>
__device__ __forceinline__ void store_tile(const Problem& pb, int grp, int m0, int n0, int slice, int lane,
                                           const float* acc) {
  CK_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + dev::mma_c_row(lane, i), col = n0 + dev::mma_c_col(lane, i);
    if (m < pb.M && col < pb.cols) pb.store(grp, m, col, slice, acc[i]);
  }
}

template <TensorCorePrecision P, class Problem>
__global__ void __launch_bounds__(32) implicit_gemm_tc_v1_warp_per_tile(Problem pb, int n_tiles) {
  const int lane = static_cast<int>(threadIdx.x);
  const int group = lane >> 2, tig = lane % 4;
  const int grp = blockIdx.y;
  const int m0 = (blockIdx.x / n_tiles) * kWarpTileM, n0 = (blockIdx.x % n_tiles) * kWarpTileN;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int k0 = 0; k0 < pb.depth; k0 += kMmaStepK<P>) {
    // In words: a0..a3 are (group, tig), (group+8, tig), (group, tig+4),
    // (group+8, tig+4); b0, b1 are (k = tig, n = group), (k = tig+4, n = group).
    std::uint32_t af[4], bf[2];
    CK_UNROLL
    for (int r = 0; r < 4; ++r) af[r] = a_word<P>(pb, grp, m0 + group + (r & 1) * 8, k0, tig + (r >> 1) * 4, pb.depth);
    CK_UNROLL
    for (int r = 0; r < 2; ++r) bf[r] = b_word<P>(pb, grp, k0, tig + r * 4, n0 + group, pb.depth);
    dev::mma<P>(acc, af, bf);
  }
  store_tile(pb, grp, m0, n0, 0, lane, acc);
}

// ---------------------------------------------------------------------------
// v2, tiled (see the head of the file).
namespace tiled {
constexpr int kTileM = kGemmTileM, kTileN = kGemmTileN, kTileK = kGemmTileK;
constexpr int kThreads = 256;
constexpr int kWarpsM = 2, kWarpsN = 4;
constexpr int kWarpM = kTileM / kWarpsM, kWarpN = kTileN / kWarpsN;  // 32 x 16
constexpr int kMmaM = kWarpM / 16, kMmaN = kWarpN / 8;               // 2 x 2 mma tiles
constexpr int kRowK = kTileK + 4;    // As[m][k] and Bs[col][k]: 36 words
constexpr int kRowCol = kTileN + 8;  // Bs[k][col]: 72 words
constexpr int kRowC = kTileN + 8;    // Cs[m][col]: 72 words
static_assert(kWarpsM * kWarpsN * 32 == kThreads, "the warps must tile the block tile exactly");
static_assert(kTileK == 32, "the along-k loaders put one warp on one run of k");
static_assert(kTileK * kRowCol == kTileN * kRowK, "both B layouts take the same shared memory");
}  // namespace tiled

// Where output (row, col) of the tile sits in its Cs row: rows whose bit 2
// is set swap each even column with the odd one after it, so the two halves
// of a warp's fragment store (groups 0-3 and 4-7, same banks at 72 words a
// row) land on even and odd banks.
__device__ __forceinline__ int c_column(int row, int col) { return col ^ ((row >> 2) & 1); }

template <bool BAlongK>
using TcBTile = std::conditional_t<BAlongK, std::uint32_t[tiled::kTileN][tiled::kRowK],
                                   std::uint32_t[tiled::kTileK][tiled::kRowCol]>;

template <TensorCorePrecision P, class Problem>
__global__ void __launch_bounds__(tiled::kThreads) implicit_gemm_tc_v2_tiled(Problem pb, int n_tiles, int slice_len) {
  using namespace tiled;
  constexpr bool kAlongK = Problem::kBAlongK;
  __shared__ SharedArray<std::uint32_t[kTileM][kRowK]> As;  // As[m][k]
  __shared__ SharedArray<TcBTile<kAlongK>> Bs;              // Bs[col][k] along k, else Bs[k][col]
  __shared__ SharedArray<float[kTileM][kRowC]> Cs;          // the output tile, swizzled (c_column)
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32, warp = tid / 32;
  const int group = lane >> 2, tig = lane % 4;
  const int wm = (warp / kWarpsN) * kWarpM, wn = (warp % kWarpsN) * kWarpN;
  const int grp = blockIdx.y, slice = blockIdx.z;
  const int m0 = (blockIdx.x / n_tiles) * kTileM;
  const int n0 = (blockIdx.x % n_tiles) * kTileN;
  const int k_begin = slice * slice_len;
  const int k_end = pb.depth < k_begin + slice_len ? pb.depth : k_begin + slice_len;
  float acc[kMmaM][kMmaN][4] = {};
  // A tile is kTileK words deep: 32 elements of k in tf32, 64 in bf16.
  for (int k0 = k_begin; k0 < k_end; k0 += kTileK * kElementsPerWord<P>) {
    // Version 3's loaders, rounding as they store.
    CK_UNROLL
    for (int i = 0; i < kTileM / 8; ++i) {
      const int m = warp + 8 * i;
      As[m][lane] = a_word<P>(pb, grp, m0 + m, k0, lane, k_end);
    }
    if constexpr (kAlongK) {
      CK_UNROLL
      for (int i = 0; i < kTileN / 8; ++i) {
        const int col = warp + 8 * i;
        Bs[col][lane] = b_word<P>(pb, grp, k0, lane, n0 + col, k_end);
      }
    } else {  // lanes walk the columns: tid % 64 is the column, 4 rows of words per pass
      const int col = tid % kTileN;
      CK_UNROLL
      for (int i = 0; i < kTileK / 4; ++i) {
        const int kk = tid / kTileN + 4 * i;
        Bs[kk][col] = b_word<P>(pb, grp, k0, kk, n0 + col, k_end);
      }
    }
    __syncthreads();
    CK_UNROLL
    for (int ks = 0; ks < kTileK; ks += 8) {
      std::uint32_t af[kMmaM][4], bf[kMmaN][2];
      CK_UNROLL
      for (int i = 0; i < kMmaM; ++i)
        CK_UNROLL
        for (int r = 0; r < 4; ++r) af[i][r] = As[wm + i * 16 + group + (r & 1) * 8][ks + tig + (r >> 1) * 4];
      CK_UNROLL
      for (int j = 0; j < kMmaN; ++j)
        CK_UNROLL
        for (int r = 0; r < 2; ++r) {
          const int n = wn + j * 8 + group, k = ks + tig + r * 4;
          if constexpr (kAlongK) {
            bf[j][r] = Bs[n][k];
          } else {
            bf[j][r] = Bs[k][n];
          }
        }
      CK_UNROLL
      for (int i = 0; i < kMmaM; ++i)
        CK_UNROLL
        for (int j = 0; j < kMmaN; ++j) dev::mma<P>(acc[i][j], af[i], bf[j]);
    }
    __syncthreads();  // before the next K-step overwrites the tiles
  }
  // The epilogue goes through shared memory (see the head): fragments in,
  // rows out with a warp's lanes on 32 consecutive columns.
  CK_UNROLL
  for (int i = 0; i < kMmaM; ++i)
    CK_UNROLL
    for (int j = 0; j < kMmaN; ++j)
      CK_UNROLL
      for (int r = 0; r < 4; ++r) {
        const int row = wm + i * 16 + group + (r >= 2 ? 8 : 0), col = wn + j * 8 + tig * 2 + (r & 1);
        Cs[row][c_column(row, col)] = acc[i][j][r];
      }
  __syncthreads();
  const int col = tid % kTileN;
  for (int row = tid / kTileN; row < kTileM; row += kThreads / kTileN)
    if (m0 + row < pb.M && n0 + col < pb.cols) pb.store(grp, m0 + row, n0 + col, slice, Cs[row][c_column(row, col)]);
}

// ---------------------------------------------------------------------------
// Host side.

// Versions 3's and 4's tiles are version 5's (at least 32 x 32); the grid
// check below uses the smallest.
std::int64_t tile_m(int version) {
  if (version == kImplicitGemmTcWarpVersion) return kWarpTileM;
  return version == kImplicitGemmTcTiledVersion ? tiled::kTileM : 32;
}
std::int64_t tile_n(int version) {
  if (version == kImplicitGemmTcWarpVersion) return kWarpTileN;
  return version == kImplicitGemmTcTiledVersion ? tiled::kTileN : 32;
}
// Version 3 runs version 5's kernels, split-K and workspace (with mma).
bool runs_version5(int version) { return version == kImplicitGemmTcPipelinedVersion; }
// Versions 4 and 5 run on the channels-last copies, with the same workspace
// and backward-weights.
bool runs_channels_last(int version) {
  return version == kImplicitGemmTcChannelsLastVersion || version == kImplicitGemmTcWgmmaVersion;
}
ChannelsLastProduct product_of(int version) {
  return version == kImplicitGemmTcWgmmaVersion ? ChannelsLastProduct::wgmma : ChannelsLastProduct::mma_sync;
}

Split split_of(DType dtype, const Conv2dDesc& d, int version) {
  if (version == kImplicitGemmTcWarpVersion) return Split{1, static_cast<int>(std::max<std::int64_t>(d.N * d.P() * d.Q(), 1))};
  return weight_split(dtype, d, d.N * d.P() * d.Q());
}

void check_call(const char* op, DType dtype, const Conv2dDesc& d, int version,
                std::initializer_list<const void*> required) {
  const std::string why = conv2d_implicit_gemm_tensor_core_cannot_implement(dtype, d, version);
  CK_CHECK(why.empty(), op, " v", version, ": ", why, "; descriptor ", d.str());
  for (const void* p : required) CK_CHECK(p != nullptr, op, ": a required buffer is null; descriptor ", d.str());
}

// Launches `version` of problem pb over `groups` groups, in `precision`.
template <TensorCorePrecision P, class Problem>
void run_problem_in(const Problem& pb, int groups, int version, Split split) {
  const int n_tiles = static_cast<int>(ceil_div(pb.cols, tile_n(version)));
  const dim3 grid(static_cast<unsigned>(ceil_div(pb.M, tile_m(version)) * n_tiles), static_cast<unsigned>(groups),
                  static_cast<unsigned>(split.slices));
  if (version == kImplicitGemmTcWarpVersion) {
    launch(implicit_gemm_tc_v1_warp_per_tile<P, Problem>, grid, dim3(32), 0, nullptr, pb, n_tiles);
  } else {
    launch(implicit_gemm_tc_v2_tiled<P, Problem>, grid, dim3(tiled::kThreads), 0, nullptr, pb, n_tiles,
           std::max(split.len, 1));
  }
}
template <class Problem>
void run_problem(TensorCorePrecision precision, const Problem& pb, int groups, int version, Split split) {
  if (pb.M == 0 || pb.cols == 0) return;
  if (precision == TensorCorePrecision::tf32) {
    run_problem_in<TensorCorePrecision::tf32>(pb, groups, version, split);
  } else {
    run_problem_in<TensorCorePrecision::bf16>(pb, groups, version, split);
  }
}

}  // namespace

void register_conv2d_implicit_gemm_tensor_core_family() {
  static const bool registered = [] {
    register_kernel_family(
        {"conv2d_implicit_gemm_tensor_core", kVersions, kImplicitGemmTcPipelinedVersion,
         "v1 warp per tile: one warp per 16x8 tile of the implicit product, tf32 or bf16 fragments gathered from "
         "x, w or dy\n"
         "v2 tiled: 64x64x32-word tiles gathered into shared memory as tf32 or bf16 pairs, 8 warps of 32x16 on "
         "mma.sync, deterministic split-K for backward-weights\n"
         "v3 pipelined: conv2d_implicit_gemm v5's division-free gathers, 4-stage cp.async pipeline and tiles, each "
         "warp's tile on mma.sync, rounded as the fragments are read\n"
         "v4 channels-last: every pass on channels-last copies of its operands, gathered 16 bytes (4 channels) "
         "per cp.async: forward and backward-data into swizzled x-major stages of 16 k, backward-weights into "
         "v3's k-major stages, 4 channels of one position per copy\n"
         "v5 wgmma: v4's copies, every pass in tf32 multiplied by m64n128k8 wgmma from 128-byte swizzled "
         "stages of 32 k: forward and backward-data gathered as v4 into 128x128 or 64x128 tiles of one or two "
         "warpgroups, backward-weights staged through registers and stored transposed; bf16 as v4; on sm_90a "
         "and sim"});
    return true;
  }();
  (void)registered;
}

std::string conv2d_implicit_gemm_tensor_core_cannot_implement(DType dtype, const Conv2dDesc& d, int version) {
  if (version < 1 || version > kVersions)
    return detail::concat("conv2d_implicit_gemm_tensor_core has versions 1..", kVersions, ", not ", version);
  if (dtype != DType::float32)
    return detail::concat("dtype ", dtype, " is not supported: the tensor-core convolution takes float32 (rounded "
                          "to tf32 or bf16 inside)");
  if (std::string why = index_limits_reason(d, "conv2d_implicit_gemm_tensor_core"); !why.empty()) return why;
  if (runs_version5(version)) {
    if (std::string why = conv2d_implicit_gemm_cannot_implement(dtype, d, kImplicitGemmPipelinedVersion); !why.empty())
      return why;
  }
  if (runs_channels_last(version)) {
    if (std::string why = conv2d_implicit_gemm_channels_last_cannot_implement(d); !why.empty()) return why;
  }
  if (version == kImplicitGemmTcWgmmaVersion) {
    if (std::string why = conv2d_implicit_gemm_channels_last_wgmma_cannot_implement(); !why.empty()) return why;
  }
  // The largest product: forward's Kg x N*P*Q, backward-data's Cg x N*H*W
  // (its stride phases together), backward-weights' Kg x Cg*R*S.
  const std::int64_t tiles = std::max({ceil_div(d.K_per_group(), tile_m(version)) * ceil_div(d.N * d.P() * d.Q(), tile_n(version)),
                                       ceil_div(d.C_per_group(), tile_m(version)) * ceil_div(d.N * d.H * d.W, tile_n(version)),
                                       ceil_div(d.K_per_group(), tile_m(version)) *
                                           ceil_div(d.C_per_group() * d.R * d.S, tile_n(version))});
  if (tiles > kMaxGridX) return detail::concat("a product of ", tiles, " tiles exceeds the grid's x limit of ", kMaxGridX);
  return {};
}

int conv2d_implicit_gemm_tensor_core_weight_slices(DType dtype, const Conv2dDesc& d, int version) {
  if (runs_channels_last(version)) return conv2d_implicit_gemm_channels_last_weight_slices(d);
  if (runs_version5(version)) return conv2d_implicit_gemm_weight_slices(dtype, d, kImplicitGemmPipelinedVersion);
  return split_of(dtype, d, version).slices;
}

std::size_t conv2d_implicit_gemm_tensor_core_workspace_bytes(DType dtype, const Conv2dDesc& d, ConvPass pass,
                                                             int version) {
  CK_CHECK(version >= 1 && version <= kVersions, "conv2d_implicit_gemm_tensor_core has versions 1..", kVersions,
           ", not ", version);
  if (version == kImplicitGemmTcWarpVersion) return 0;
  if (runs_channels_last(version)) return conv2d_implicit_gemm_channels_last_workspace_bytes(d, pass);
  if (runs_version5(version)) return conv2d_implicit_gemm_workspace_bytes(dtype, d, pass, kImplicitGemmPipelinedVersion);
  return tiled_workspace_bytes(dtype, d, pass, split_of(dtype, d, version));
}

void launch_conv2d_implicit_gemm_tensor_core_forward(TensorCorePrecision precision, DType dtype, const Conv2dDesc& d,
                                                     const void* x, const void* w, const void* b, void* y,
                                                     void* workspace, int version) {
  register_conv2d_implicit_gemm_tensor_core_family();
  check_call("conv2d_implicit_gemm_tensor_core forward", dtype, d, version, {x, w, y});
  if (runs_channels_last(version)) {
    launch_conv2d_implicit_gemm_channels_last_mma_forward(precision, d, x, w, b, y, workspace, product_of(version));
    return;
  }
  if (version == kImplicitGemmTcPipelinedVersion) {
    launch_conv2d_implicit_gemm_pipelined_mma_forward(precision, d, x, w, b, y);
    return;
  }
  const Geometry g = geometry(d);
  const ForwardProblem<float> pb{g, static_cast<const float*>(x), static_cast<const float*>(w),
                                 static_cast<const float*>(b), static_cast<float*>(y), g.Kg, g.N * g.PQ,
                                 g.Cg * g.RS};
  run_problem(precision, pb, static_cast<int>(d.groups), version, Split{1, std::max(pb.depth, 1)});
}

void launch_conv2d_implicit_gemm_tensor_core_backward_data(TensorCorePrecision precision, DType dtype,
                                                           const Conv2dDesc& d, const void* dy, const void* w,
                                                           void* dx, void* workspace, int version) {
  register_conv2d_implicit_gemm_tensor_core_family();
  check_call("conv2d_implicit_gemm_tensor_core backward-data", dtype, d, version, {dy, w, dx});
  const std::size_t needed =
      conv2d_implicit_gemm_tensor_core_workspace_bytes(dtype, d, ConvPass::backward_data, version);
  CK_CHECK(needed == 0 || workspace != nullptr, "conv2d_implicit_gemm_tensor_core backward-data: needs ", needed,
           " bytes of workspace but workspace is null; descriptor ", d.str());
  if (runs_channels_last(version)) {
    launch_conv2d_implicit_gemm_channels_last_mma_backward_data(precision, d, dy, w, dx, workspace,
                                                                product_of(version));
    return;
  }
  if (version == kImplicitGemmTcPipelinedVersion) {
    launch_conv2d_implicit_gemm_pipelined_mma_backward_data(precision, d, dy, w, dx, workspace);
    return;
  }
  const Geometry g = geometry(d);
  float* wt = needed > 0 ? static_cast<float*>(workspace) : nullptr;
  if (wt != nullptr) {
    const int total = g.K * g.Cg * g.RS;
    const LaunchShape shape = grid_stride_shape(total);
    launch(transpose_filter_kernel<float>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr,
           static_cast<const float*>(w), wt, g, total);
  }
  // One product per stride phase, as conv2d_implicit_gemm.cu's.
  for (int a = 0; a < g.sh; ++a)
    for (int b = 0; b < g.sw; ++b) {
      const StridePhase ph = stride_phase(a, g.sh, g.pt, g.dh, g.R, g.H);
      const StridePhase pw = stride_phase(b, g.sw, g.pl, g.dw, g.S, g.W);
      if (ph.count == 0 || pw.count == 0) continue;
      const int depth = g.Kg * ph.taps * pw.taps;
      const BackwardDataProblem<float> pb{g,  static_cast<const float*>(dy), static_cast<const float*>(w), wt,
                                          static_cast<float*>(dx), ph, pw, g.Cg, g.N * ph.count * pw.count, depth};
      run_problem(precision, pb, static_cast<int>(d.groups), version, Split{1, std::max(depth, 1)});
    }
}

void launch_conv2d_implicit_gemm_tensor_core_backward_weights(TensorCorePrecision precision, DType dtype,
                                                              const Conv2dDesc& d, const void* x, const void* dy,
                                                              void* dw, void* workspace, int version) {
  register_conv2d_implicit_gemm_tensor_core_family();
  check_call("conv2d_implicit_gemm_tensor_core backward-weights", dtype, d, version, {x, dy, dw});
  const std::size_t needed =
      conv2d_implicit_gemm_tensor_core_workspace_bytes(dtype, d, ConvPass::backward_weights, version);
  CK_CHECK(needed == 0 || workspace != nullptr, "conv2d_implicit_gemm_tensor_core backward-weights: needs ", needed,
           " bytes of workspace but workspace is null; descriptor ", d.str());
  if (runs_channels_last(version)) {
    launch_conv2d_implicit_gemm_channels_last_mma_backward_weights(precision, d, x, dy, dw, workspace,
                                                                   product_of(version));
    return;
  }
  if (runs_version5(version)) {
    launch_conv2d_implicit_gemm_pipelined_mma_backward_weights(precision, d, x, dy, dw, workspace);
    return;
  }
  const Geometry g = geometry(d);
  const Split split = split_of(dtype, d, version);
  const int dw_elems = g.K * g.Cg * g.RS;
  float* out = split.slices > 1 ? static_cast<float*>(workspace) : static_cast<float*>(dw);
  const BackwardWeightsProblem<float> pb{g, static_cast<const float*>(x), static_cast<const float*>(dy), out,
                                         split.slices > 1 ? dw_elems : 0, g.Kg, g.Cg * g.RS, g.N * g.PQ};
  run_problem(precision, pb, static_cast<int>(d.groups), version, split);
  if (split.slices > 1) launch_sum_slices(dtype, workspace, split.slices, dw_elems, dw);
}

}  // namespace convkit::CK_GPU_NS
