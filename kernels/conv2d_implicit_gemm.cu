// Implicit-GEMM convolution: the three passes of im2col + GEMM (see
// docs/algorithms/im2col_gemm.md) where each GEMM operand element is gathered
// from the image (or the output gradient) at the moment the GEMM loads it, so
// the column matrix, 9x the activations for a 3x3 layer and larger than L2 on
// real layers, is never written or read back. The contract is in
// conv2d_implicit_gemm.cuh; the problems (what A, B and a result are
// for each pass, the stride phases, the split-K) are in
// conv2d_implicit_gemm_problem.cuh, shared with the
// tensor-core kernels (conv2d_implicit_gemm_tensor_core.cu).
//
// Per group g, with Cg = C/groups, Kg = K/groups and depth = Cg*R*S, the
// passes are these products (col(x) the column matrix, never formed):
//
//   pass              M    columns     K (summed)   A (M x K)      B (K x columns)
//   forward           Kg   N*P*Q       Cg*R*S       w[g]           col(x)        gathered from x
//   backward-data     Cg   N*H*W       Kg*R*S       w[g]^T         dy "col2im"   gathered from dy
//   backward-weights  Kg   Cg*R*S      N*P*Q        dy[g]          col(x)^T      gathered from x
//
// The batch is folded into the GEMM: into the columns for forward and
// backward-data (one GEMM per group, N times wider than per image), into K for
// backward-weights (the sum over images is the K loop, no accumulator slots).
// Backward-data gathers: dx[n][c][h][w] takes dy[n][k][p][q] through tap
// (r, s) exactly when h = p*sh - pad_top + r*dh and w = q*sw - pad_left +
// s*dw, so B's entry is dy at p = (h + pad_top - r*dh) / sh when that divides
// exactly and lands inside, else 0. Stride, dilation and padding all go
// through that one test; no flipped filter and no scatter (and so no atomics)
// are needed. At stride > 1 most taps would meet a zero: a pixel h is reached
// only by the taps r with r*dh = h + pad_top (mod sh). So backward-data runs
// one product per stride phase (h + pad_top mod sh, and the same along w):
// the phase's pixels as columns, only the taps that reach them in K. The
// phases' K sum to the filter's taps, so no multiply-add is wasted.
//
// The floor, per pass (every pass does the same multiply-adds):
//   FLOPs  2 * N * K * Cg * R * S * P * Q  (Conv2dDesc::flops()).
//   bytes  what the pass must read and write once, in elements of the dtype:
//          forward           N*C*H*W (x) + K*Cg*R*S (w) + N*K*P*Q (y)  (+ K bias)
//          backward-data     N*K*P*Q (dy) + K*Cg*R*S (w) + N*C*H*W (dx)
//          backward-weights  N*C*H*W (x) + N*K*P*Q (dy) + K*Cg*R*S (dw)
//          The explicit path (version 1) also writes and reads the column
//          matrix, N*C*R*S*P*Q elements each way: about 2*R*S/(sh*sw) times
//          the image, the traffic this file removes.
//   For cifar10-cnn conv4 (N=128, 64->64, 3x3 on 15x15, no padding) that is
//   1.6 GFLOP over 3.3 MB: ~480 flop/B in float32, compute-bound on any GPU
//   if the tiles reuse what they load.
//
// v1 explicit: not in this file; im2col.cu + gemm.cu, run by
//    src/gpu/gpu_conv_im2col_gemm.cpp. Kept as the twin the others are
//    checked against, and as what runs a descriptor these cannot.
// v2 simple: one thread per output element of the product (consecutive
//    threads on consecutive columns, so the gathers of B and the stores
//    coalesce where the layout allows), its K loop gathering A and B from
//    global memory: 2 loads per multiply-add, like gemm v1, and every index
//    recomputed with divisions. Obviously right.
// v3 tiled: a block of 256 threads computes a 64 x 64 tile of the product,
//    each thread 4 x 4 outputs in registers, K consumed 32 at a time through
//    shared memory.
//    - The tile loaders are where im2col happens: each element of the A and
//      B tiles is gathered from x, dy or w by its (k, column) coordinates.
//    - Coalescing: every loader puts a warp's 32 lanes on 32 consecutive
//      addresses of the operand's contiguous dimension. For A (the filter, or
//      dy in backward-weights) that is k; for the gathered B of forward and
//      backward-data it is the column (consecutive output positions, so
//      consecutive pixels of one image row at stride 1); for backward-weights'
//      B it is k again (consecutive output positions of one image).
//      Backward-data's A is w^T, whose rows are not contiguous in w, so the
//      pass first transposes w (K*Cg*R*S elements, the size of the filter)
//      into the workspace; when that does not fit workspace_limit it reads w
//      in place.
//    - Shared memory: both tiles are stored k-major, As[k][m] and Bs[k][n],
//      rows padded to 65 words. A loader whose lanes walk k writes a column
//      of the tile: stride 65 puts the 32 lanes in 32 different banks. The
//      inner loop reads As[k][ty + 16i] (two words per warp, broadcast) and
//      Bs[k][tx + 16j] (16 consecutive words): a thread owns rows and columns
//      16 apart, not 4 adjacent ones, so no read conflicts either.
//    - Per K-step the block loads 2 * 64 * 32 elements for 2 * 64 * 64 * 32
//      flops: 16 flop/B in float32, from global (L2) memory.
//    - Backward-weights' K (N*P*Q, 131072 on a 32x32 layer at batch 128) is
//      long and its M x columns (K x Cg*R*S) small, so it is split: slice z
//      of gridDim.z sums a fixed range of K into its own partial dw, and a
//      second kernel adds the slices in slice order (im2col.cu's
//      sum_slices). The partition depends only on the descriptor and dtype,
//      so the bits are the same on every run and every GPU.
// v4 staged (kernels/conv2d_implicit_gemm_staged.cuh): v3's
//    tiles and inner loop, but no gathers from global memory. Per K-step the
//    image rows the tile's positions reach (one contiguous run per channel)
//    and the A rows are copied to shared memory with cp.async in aligned
//    16-byte chunks, and the B tile is formed from that patch. Tiles stay in
//    one image (64 positions, or 32-position K-steps for backward-weights).
//    Backward-data's filter is transposed phase by phase, so a phase's A rows
//    are contiguous runs of just its taps. Where v4 cannot run (a plane or
//    stride phase under 32 positions, a patch over its shared memory, no
//    workspace for the transposed filter) the algorithm runs v3.
//    The sim model put v4 at 0.99-1.12x v3's time (less DRAM traffic, more
//    shared memory traffic, a slower phase transpose); the H200 measured it
//    1.0-1.7x faster than v3 where it runs (16x16 planes and up), so what
//    the model cannot see, latency, was what mattered.
// v5 pipelined (kernels/conv2d_implicit_gemm_pipelined.cuh): what the H200
//    showed v3 lacks. GEMM v6's warp tiles (64x64, 64x32 or 32x64, 4x8 or
//    4x4 per thread, 16-byte fragment reads), a 4-stage cp.async pipeline of
//    one-element gathers, zero-filled in the padding, and loaders that keep
//    one coordinate fixed and step the other by mixed-radix adds, so the K
//    loop divides nothing. Backward-data runs per stride phase on v4's
//    phase-transposed filter; backward-weights splits K as v3 does. Where
//    the transposed filter does not fit the workspace, v3 runs instead.
//    The default since the H200 timed it (docs/gpu/measured-h200.md): on
//    44 of the 45 passes of cifar10-cnn's and resnet18-cifar's layers it is
//    the fastest implicit version, up to 4.7x faster than v3 (the 45th,
//    layer2.down's backward-data, within 3% of v3).
//
// Indices are 32-bit: the launcher refuses a descriptor whose tensors have
// more than kIndexLimit elements, 2^31 less a headroom that keeps tile
// rounding from wrapping (the explicit path then runs it).
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>

#include "convkit/backend/kernel_versions.h"
#include "kernels/conv2d_implicit_gemm.cuh"
#include "kernels/conv2d_implicit_gemm_channels_last.cuh"
#include "kernels/conv2d_implicit_gemm_pipelined.cuh"
#include "kernels/conv2d_implicit_gemm_problem.cuh"
#include "kernels/conv2d_implicit_gemm_staged.cuh"
#include "kernels/device_math.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/im2col.cuh"
#include "kernels/tensor_view.cuh"

namespace convkit::CK_GPU_NS {

namespace {

// The problems, stride phases and split-K (conv2d_implicit_gemm_problem.cuh).
using namespace implicit_gemm;

constexpr int kVersions = 5;

// ---------------------------------------------------------------------------
// v2, simple: one thread per (m, col) of group blockIdx.y.
constexpr int kSimpleThreads = 256;

template <typename T, class Problem>
__global__ void __launch_bounds__(kSimpleThreads) implicit_gemm_v2_simple(Problem pb) {
  const int grp = blockIdx.y;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kSimpleThreads + threadIdx.x;
  if (i >= static_cast<std::int64_t>(pb.M) * pb.cols) return;
  const int m = static_cast<int>(i / pb.cols), col = static_cast<int>(i % pb.cols);
  T acc = 0;
  for (int k = 0; k < pb.depth; ++k) acc = dev::fma(pb.a(grp, m, k), pb.b(grp, k, col), acc);
  pb.store(grp, m, col, 0, acc);
}

// ---------------------------------------------------------------------------
// v3, tiled (see the head of the file).
namespace tiled {
constexpr int kTileM = kGemmTileM, kTileN = kGemmTileN, kTileK = kGemmTileK;
constexpr int kThreads = 256;
constexpr int kThreadM = 4, kThreadN = 4;
constexpr int kSide = 16;  // threads along M and along N
constexpr int kPad = 1;
static_assert(kSide * kThreadM == kTileM && kSide * kThreadN == kTileN && kSide * kSide == kThreads,
              "the threads must tile the output tile exactly");
static_assert(kTileK == 32, "the along-k loaders put one warp on one run of k");
}  // namespace tiled

template <typename T, class Problem>
__global__ void __launch_bounds__(tiled::kThreads) implicit_gemm_v3_tiled(Problem pb, int n_tiles, int slice_len) {
  using namespace tiled;
  __shared__ SharedArray<T[kTileK][kTileM + kPad]> As;  // As[k][m]
  __shared__ SharedArray<T[kTileK][kTileN + kPad]> Bs;  // Bs[k][col]
  const int tid = threadIdx.x;
  const int tx = tid % kSide, ty = tid / kSide;
  const int lane = tid % 32, warp = tid / 32;  // along-k loaders: lane walks k
  const int grp = blockIdx.y, slice = blockIdx.z;
  const int m0 = (blockIdx.x / n_tiles) * kTileM;
  const int n0 = (blockIdx.x % n_tiles) * kTileN;
  const int k_begin = slice * slice_len;
  const int k_end = pb.depth < k_begin + slice_len ? pb.depth : k_begin + slice_len;
  T acc[kThreadM][kThreadN] = {};
  for (int k0 = k_begin; k0 < k_end; k0 += kTileK) {
    const int k = k0 + lane;
    CK_UNROLL
    for (int i = 0; i < kTileM / 8; ++i) {
      const int m = warp + 8 * i;
      As[lane][m] = (m0 + m < pb.M && k < k_end) ? pb.a(grp, m0 + m, k) : T(0);
    }
    if constexpr (Problem::kBAlongK) {
      CK_UNROLL
      for (int i = 0; i < kTileN / 8; ++i) {
        const int col = warp + 8 * i;
        Bs[lane][col] = (n0 + col < pb.cols && k < k_end) ? pb.b(grp, k, n0 + col) : T(0);
      }
    } else {  // lanes walk the columns: tid % 64 is the column, 4 rows of k per pass
      const int col = tid % kTileN;
      CK_UNROLL
      for (int i = 0; i < kTileK / 4; ++i) {
        const int kk = tid / kTileN + 4 * i;
        Bs[kk][col] = (n0 + col < pb.cols && k0 + kk < k_end) ? pb.b(grp, k0 + kk, n0 + col) : T(0);
      }
    }
    __syncthreads();
    CK_UNROLL
    for (int kk = 0; kk < kTileK; ++kk) {
      T af[kThreadM], bf[kThreadN];
      CK_UNROLL
      for (int i = 0; i < kThreadM; ++i) af[i] = As[kk][ty + kSide * i];
      CK_UNROLL
      for (int j = 0; j < kThreadN; ++j) bf[j] = Bs[kk][tx + kSide * j];
      CK_UNROLL
      for (int i = 0; i < kThreadM; ++i)
        CK_UNROLL
        for (int j = 0; j < kThreadN; ++j) acc[i][j] = dev::fma(af[i], bf[j], acc[i][j]);
    }
    __syncthreads();  // before the next K-step overwrites the tiles
  }
  CK_UNROLL
  for (int i = 0; i < kThreadM; ++i) {
    const int m = m0 + ty + kSide * i;
    CK_UNROLL
    for (int j = 0; j < kThreadN; ++j) {
      const int col = n0 + tx + kSide * j;
      if (m < pb.M && col < pb.cols) pb.store(grp, m, col, slice, acc[i][j]);
    }
  }
}

// Version 4's backward-data A, one stride phase at a time: wt[(grp*Cg + c)*depth
// + kk*taps + jr*pw.taps + js] = w[((grp*Kg + kk)*Cg + c)*R*S + r*S + s], r and
// s the jr-th and js-th taps of the phase, depth = Kg*taps. A phase's rows
// are then contiguous runs of exactly the taps it multiplies.
template <typename T>
__global__ void transpose_filter_phase_kernel(const T* __restrict__ w, T* __restrict__ wt, Geometry g,
                                              StridePhase ph, StridePhase pw, int total) {
  const int taps = ph.taps * pw.taps, depth = g.Kg * taps;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int row = i / depth, k = i - row * depth;  // row = grp*Cg + c
    const int grp = row / g.Cg, c = row - grp * g.Cg;
    const int kk = k / taps, t = k - kk * taps, jr = t / pw.taps, js = t - jr * pw.taps;
    const int r = ph.tap_first + jr * ph.tap_step, s = pw.tap_first + js * pw.tap_step;
    wt[i] = w[((grp * g.Kg + kk) * g.Cg + c) * g.RS + r * g.S + s];
  }
}

// ---------------------------------------------------------------------------
// Host side.

// Version 4's tiles stay inside one image: a plane (or stride phase) of fewer
// positions would leave over half of a 64-wide tile empty.
constexpr std::int64_t kMinStagedPlane = 32;

std::int64_t staged_weight_steps(const Conv2dDesc& d) { return d.N * ceil_div(d.P() * d.Q(), staged::kTileK); }

// An overload, not a hiding name: the K-total one is implicit_gemm's.
using implicit_gemm::weight_split;

Split weight_split(DType dtype, const Conv2dDesc& d, int version) {
  if (version == kImplicitGemmStagedVersion) return weight_split(dtype, d, staged_weight_steps(d) * staged::kTileK);
  if (version == kImplicitGemmPipelinedVersion) return weight_split(dtype, d, d.N * d.P() * d.Q(), kMaxPipelinedSlices);
  return weight_split(dtype, d, d.N * d.P() * d.Q());
}


// ---- Version 4's patch shapes (kernels/conv2d_implicit_gemm_staged.cuh).

// x as forward and backward-weights read it.
staged::PatchShape image_patch(const Geometry& g) {
  return {g.C, g.H, g.W, g.Cg, g.P, g.Q, g.sh, g.sw, -g.pt, -g.pl, g.R, g.S, g.dh, g.dw};
}

// One tap of a phase, seen from dy: the row of dy that phase position i
// reads through the phase's jr-th tap is i + offset + jr*step.
void phase_axis(const StridePhase& ph, int stride, int pad, int dil, int& offset, int& step) {
  offset = ph.taps > 0 ? (ph.first + pad - ph.tap_first * dil) / stride : 0;
  step = ph.taps > 1 ? -(ph.tap_step * dil) / stride : 0;
}

// dy as one backward-data stride phase reads it: stride 1, taps walking back.
staged::PatchShape phase_patch(const Geometry& g, const StridePhase& ph, const StridePhase& pw) {
  staged::PatchShape s{g.K, g.P, g.Q, g.Kg, ph.count, pw.count, 1, 1, 0, 0, ph.taps, pw.taps, 0, 0};
  phase_axis(ph, g.sh, g.pt, g.dh, s.oh, s.th);
  phase_axis(pw, g.sw, g.pl, g.dw, s.ow, s.tw);
  return s;
}

// The most elements of patch any block stages: `per_tile` positions per
// tile (or K-step), K-steps (or column tiles) of `chunk` over `depth` =
// channels * R*S. Rounded for 16-byte chunks, the larger case.
std::int64_t patch_elems(const staged::PatchShape& ps, int per_tile, int chunk, int depth, int vec) {
  int rows = 0;
  for (int pos0 = 0; pos0 < ps.P * ps.Q; pos0 += per_tile)
    rows = std::max(rows, staged::row_span(ps, pos0, std::min(per_tile, ps.P * ps.Q - pos0)).count);
  const int rs = ps.R * ps.S;
  int channels = 0;
  for (int k0 = 0; k0 < depth && rs > 0; k0 += chunk)
    channels = std::max(channels, (std::min(k0 + chunk, depth) - 1) / rs - k0 / rs + 1);
  return static_cast<std::int64_t>(channels) * staged::slot_elems(rows, ps.W, vec);
}

// Empty when version 4 can run d, else why not (beyond version 3's reasons).
std::string staged_cannot_implement(DType dtype, const Conv2dDesc& d) {
  const Geometry g = geometry(d);
  const int vec = static_cast<int>(16 / dtype_size(dtype));
  const std::int64_t cap = staged::kPatchBytes / static_cast<std::int64_t>(dtype_size(dtype));
  if (static_cast<std::int64_t>(g.PQ) < kMinStagedPlane)
    return detail::concat("the output plane has ", g.PQ, " positions; version 4 tiles one image's positions and "
                          "needs at least ", kMinStagedPlane);
  if (!transposes_filter(dtype, d))
    return "backward-data's transposed filter does not fit workspace_limit (version 4 needs it)";
  const staged::PatchShape x = image_patch(g);
  const std::int64_t fwd = patch_elems(x, staged::kTileN, staged::kTileK, g.Cg * g.RS, vec);
  const std::int64_t bwd_w = patch_elems(x, staged::kTileK, staged::kTileN, g.Cg * g.RS, vec);
  std::int64_t bwd_d = 0;
  for (int a = 0; a < g.sh; ++a)
    for (int b = 0; b < g.sw; ++b) {
      const StridePhase ph = stride_phase(a, g.sh, g.pt, g.dh, g.R, g.H);
      const StridePhase pw = stride_phase(b, g.sw, g.pl, g.dw, g.S, g.W);
      if (ph.count == 0 || pw.count == 0) continue;
      if (static_cast<std::int64_t>(ph.count) * pw.count < kMinStagedPlane)
        return detail::concat("a backward-data stride phase has ", ph.count * pw.count,
                              " positions; version 4 needs at least ", kMinStagedPlane);
      bwd_d = std::max(bwd_d, patch_elems(phase_patch(g, ph, pw), staged::kTileN, staged::kTileK,
                                          g.Kg * ph.taps * pw.taps, vec));
    }
  const std::int64_t need = std::max({fwd, bwd_w, bwd_d});
  if (need > cap)
    return detail::concat("the image patch of a tile needs ", need, " elements of shared memory, over version 4's ",
                          cap);
  return {};
}

// 16-byte chunks where every operand allows them, else one element per copy.
bool aligned16(std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (!dev::aligned16(p)) return false;
  return true;
}

template <typename T, class Problem>
void run_staged_columns(const Problem& pb, const staged::Staged<T>& st, int N, int groups, bool vec16) {
  if (pb.M == 0 || pb.cols == 0) return;
  const int pos_tiles = static_cast<int>(ceil_div(st.ps.P * st.ps.Q, staged::kTileN));
  const int col_tiles = N * pos_tiles;
  const dim3 grid(static_cast<unsigned>(ceil_div(pb.M, staged::kTileM) * col_tiles), static_cast<unsigned>(groups));
  if (vec16)
    launch(staged::implicit_gemm_v4_staged_columns<T, Problem, dev::kVec16<T>>, grid, dim3(staged::kThreads), 0,
           nullptr, pb, st, col_tiles);
  else
    launch(staged::implicit_gemm_v4_staged_columns<T, Problem, 1>, grid, dim3(staged::kThreads), 0, nullptr, pb, st,
           col_tiles);
}

// Calls f with version 5's tile for an M x cols product over groups x
// slices: 32x64 for M <= 32, 64x64 when those tiles give the GPU two blocks
// per SM (kTargetBlocks), else 64x32.
template <class F>
void with_pipelined_tile(int M, int cols, int groups, int slices, F&& f) {
  using Wide = pipelined::Tile64x64::BlockTile;
  if (M <= pipelined::Tile32x64::BlockTile::kM) f(pipelined::Tile32x64{});
  else if (ceil_div(M, Wide::kM) * ceil_div(cols, Wide::kN) * groups * slices >= kTargetBlocks)
    f(pipelined::Tile64x64{});
  else f(pipelined::Tile64x32{});
}

// Version 5's kernels with the Math that Tag names (pipelined::SimtTag for
// version 5 itself, MmaTag<P> for the tensor-core family's version 3).
template <typename T, class Tag, class Problem>
void run_pipelined_columns(const Problem& pb, const pipelined::Operands<T>& op, int groups) {
  if (pb.M == 0 || pb.cols == 0) return;
  with_pipelined_tile(pb.M, pb.cols, groups, 1, [&](auto cfg) {
    using Cfg = decltype(cfg);
    const int n_tiles = static_cast<int>(ceil_div(pb.cols, Cfg::BlockTile::kN));
    const dim3 grid(static_cast<unsigned>(ceil_div(pb.M, Cfg::BlockTile::kM) * n_tiles),
                    static_cast<unsigned>(groups));
    launch(pipelined::implicit_gemm_v5_columns<T, Cfg, Problem, typename Tag::template Math<T, Cfg>>, grid,
           dim3(pipelined::kThreads), 0, nullptr, pb, op, n_tiles);
  });
}

template <typename T, class Tag>
void run_pipelined_positions(const BackwardWeightsProblem<T>& pb, const pipelined::Operands<T>& op, int groups,
                             const Split& split) {
  if (pb.M == 0 || pb.cols == 0) return;
  const int len = split.len > 0 ? split.len : std::max(pb.depth, 1);
  with_pipelined_tile(pb.M, pb.cols, groups, split.slices, [&](auto cfg) {
    using Cfg = decltype(cfg);
    const int n_tiles = static_cast<int>(ceil_div(pb.cols, Cfg::BlockTile::kN));
    const dim3 grid(static_cast<unsigned>(ceil_div(pb.M, Cfg::BlockTile::kM) * n_tiles),
                    static_cast<unsigned>(groups), static_cast<unsigned>(split.slices));
    launch(pipelined::implicit_gemm_v5_positions<T, Cfg, BackwardWeightsProblem<T>,
                                                 typename Tag::template Math<T, Cfg>>,
           grid, dim3(pipelined::kThreads), 0, nullptr, pb, op, n_tiles, len);
  });
}

// Whether Tag's Math runs element type T: the FMA tiles take float and
// double, mma float only.
template <class Tag, typename T>
inline constexpr bool kRunsType = std::is_same_v<Tag, pipelined::SimtTag> || std::is_same_v<T, float>;

bool is_implicit(int version) {
  return version == kImplicitGemmSimpleVersion || version == kImplicitGemmTiledVersion ||
         version == kImplicitGemmStagedVersion || version == kImplicitGemmPipelinedVersion;
}

void check_version(int version) {
  CK_CHECK(is_implicit(version), "conv2d_implicit_gemm: version ", version,
           " is not an implicit kernel (2 simple, 3 tiled, 4 staged, 5 pipelined; 1 "
           "is the explicit im2col path of src/gpu/gpu_conv_im2col_gemm.cpp)");
}

void check_call(const char* op, DType dtype, const Conv2dDesc& d, int version,
                std::initializer_list<const void*> required) {
  check_version(version);
  const std::string why = conv2d_implicit_gemm_cannot_implement(dtype, d, version);
  CK_CHECK(why.empty(), op, " v", version, ": ", why, "; descriptor ", d.str());
  for (const void* p : required) CK_CHECK(p != nullptr, op, ": a required buffer is null; descriptor ", d.str());
}

// A backward-data stride phase no tap reaches (a filter narrower than the
// stride: three of the four phases of a 1x1 layer at stride 2) is all zeros:
// dx is filled once, coalesced, and no product runs for it, where a product
// of depth 0 would write its zeros one phase position at a time.
void fill_unreached_phases(DType dtype, const Geometry& g, void* dx) {
  bool unreached = false;
  for (int a = 0; a < g.sh; ++a)
    for (int b = 0; b < g.sw; ++b)
      unreached = unreached || stride_phase(a, g.sh, g.pt, g.dh, g.R, g.H).taps == 0 ||
                  stride_phase(b, g.sw, g.pl, g.dw, g.S, g.W).taps == 0;
  if (unreached) launch_fill(dtype, dx, StridedView{}, static_cast<std::int64_t>(g.N) * g.C * g.H * g.W, 0.0);
}

// Launches version 2 or 3 of problem pb over `groups` groups.
template <typename T, class Problem>
void run_problem(const Problem& pb, int groups, int version, Split split = {}) {
  if (pb.M == 0 || pb.cols == 0) return;
  if (version == kImplicitGemmSimpleVersion) {
    const dim3 grid(static_cast<unsigned>(ceil_div(static_cast<std::int64_t>(pb.M) * pb.cols, kSimpleThreads)),
                    static_cast<unsigned>(groups));
    launch(implicit_gemm_v2_simple<T, Problem>, grid, dim3(kSimpleThreads), 0, nullptr, pb);
    return;
  }
  const int n_tiles = static_cast<int>(ceil_div(pb.cols, tiled::kTileN));
  const int tiles = static_cast<int>(ceil_div(pb.M, tiled::kTileM)) * n_tiles;
  const int len = split.len > 0 ? split.len : std::max(pb.depth, 1);
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(groups), static_cast<unsigned>(split.slices));
  launch(implicit_gemm_v3_tiled<T, Problem>, grid, dim3(tiled::kThreads), 0, nullptr, pb, n_tiles, len);
}

}  // namespace

void register_conv2d_implicit_gemm_family() {
  static const bool registered = [] {
    register_kernel_family(
        {"conv2d_implicit_gemm", kVersions, kImplicitGemmPipelinedVersion,
         "v1 explicit: im2col writes the column matrix, the gemm family multiplies (every descriptor)\n"
         "v2 implicit simple: one thread per output, the K loop gathering its column entries from x or dy\n"
         "v3 implicit tiled: 64x64x32 tiles gathered into shared memory, 4x4 outputs per thread, "
         "deterministic split-K for backward-weights\n"
         "v4 implicit staged: v3's tiles, the image patch and the A rows copied to shared memory as aligned "
         "16-byte runs (cp.async) and im2col formed there; runs v3 where it cannot\n"
         "v5 implicit pipelined: 64x64, 64x32 or 32x64 warp tiles fed by a 4-stage cp.async pipeline of gathers whose "
         "indices step without divisions; runs v3 where backward-data's transposed filter does not fit"});
    return true;
  }();
  (void)registered;
}

std::string conv2d_implicit_gemm_cannot_implement(DType dtype, const Conv2dDesc& d, int version) {
  if (!is_implicit(version))
    return detail::concat("version ", version, " is not an implicit kernel (2 simple, 3 tiled, 4 staged, 5 pipelined)");
  if (!is_floating(dtype)) return detail::concat("dtype ", dtype, " is not supported (float32 or float64)");
  if (std::string why = index_limits_reason(d, "conv2d_implicit_gemm"); !why.empty()) return why;
  if (version == kImplicitGemmStagedVersion) return staged_cannot_implement(dtype, d);
  if (version == kImplicitGemmPipelinedVersion && !transposes_filter(dtype, d))
    return "backward-data's transposed filter does not fit workspace_limit (version 5 needs it)";
  return {};
}

int conv2d_implicit_gemm_weight_slices(DType dtype, const Conv2dDesc& d, int version) {
  return weight_split(dtype, d, version).slices;
}

std::size_t conv2d_implicit_gemm_workspace_bytes(DType dtype, const Conv2dDesc& d, ConvPass pass, int version) {
  check_version(version);
  if (version == kImplicitGemmSimpleVersion) return 0;
  return tiled_workspace_bytes(dtype, d, pass, weight_split(dtype, d, version));
}

namespace {

// The three passes' bodies, with version 5's kernels on Tag's Math.
template <class Tag>
void forward_with(DType dtype, const Conv2dDesc& d, const void* x, const void* w, const void* b, void* y,
                  int version) {
  register_conv2d_implicit_gemm_family();
  check_call("conv2d_implicit_gemm forward", dtype, d, version, {x, w, y});
  const Geometry g = geometry(d);
  dispatch_floating(dtype, "conv2d_implicit_gemm forward", [&](auto t) {
    using T = decltype(t);
    const ForwardProblem<T> pb{g, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
                               static_cast<T*>(y), g.Kg, g.N * g.PQ, g.Cg * g.RS};
    if constexpr (kRunsType<Tag, T>) {
      if (version == kImplicitGemmPipelinedVersion) {
        run_pipelined_columns<T, Tag>(pb, {image_patch(g), pb.x, pb.w, pb.depth, 0}, static_cast<int>(d.groups));
        return;
      }
    }
    if (version != kImplicitGemmStagedVersion) {
      run_problem<T>(pb, static_cast<int>(d.groups), version);
      return;
    }
    const staged::Staged<T> st{image_patch(g), pb.x, g.N * g.C * g.HW, pb.w, g.K * pb.depth, 0, 0, pb.depth};
    run_staged_columns<T>(pb, st, g.N, static_cast<int>(d.groups), aligned16({x, w}));
  });
}

template <class Tag>
void backward_data_with(DType dtype, const Conv2dDesc& d, const void* dy, const void* w, void* dx, void* workspace,
                        int version) {
  register_conv2d_implicit_gemm_family();
  check_call("conv2d_implicit_gemm backward-data", dtype, d, version, {dy, w, dx});
  const std::size_t needed = conv2d_implicit_gemm_workspace_bytes(dtype, d, ConvPass::backward_data, version);
  CK_CHECK(needed == 0 || workspace != nullptr, "conv2d_implicit_gemm backward-data: needs ", needed,
           " bytes of workspace but workspace is null; descriptor ", d.str());
  const Geometry g = geometry(d);
  dispatch_floating(dtype, "conv2d_implicit_gemm backward-data", [&](auto t) {
    using T = decltype(t);
    // Versions 4 and 5 transpose the filter phase by phase.
    const bool by_phase = version == kImplicitGemmStagedVersion || version == kImplicitGemmPipelinedVersion;
    T* wt = needed > 0 ? static_cast<T*>(workspace) : nullptr;
    if (wt != nullptr && !by_phase) {
      const int total = g.K * g.Cg * g.RS;
      const LaunchShape shape = grid_stride_shape(total);
      launch(transpose_filter_kernel<T>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr,
             static_cast<const T*>(w), wt, g, total);
    }
    // One product per stride phase: sh * sw launches, each over only the taps
    // that reach its pixels. Version 4's and 5's filter is transposed phase by
    // phase, each phase's slice after the last.
    fill_unreached_phases(dtype, g, dx);
    int phase_offset = 0;
    for (int a = 0; a < g.sh; ++a)
      for (int b = 0; b < g.sw; ++b) {
        const StridePhase ph = stride_phase(a, g.sh, g.pt, g.dh, g.R, g.H);
        const StridePhase pw = stride_phase(b, g.sw, g.pl, g.dw, g.S, g.W);
        if (ph.count == 0 || pw.count == 0 || ph.taps == 0 || pw.taps == 0) continue;
        const int depth = g.Kg * ph.taps * pw.taps;
        BackwardDataProblem<T> pb{g,  static_cast<const T*>(dy), static_cast<const T*>(w), wt,
                                  static_cast<T*>(dx), ph, pw, g.Cg, g.N * ph.count * pw.count, depth};
        if (!by_phase) {
          run_problem<T>(pb, static_cast<int>(d.groups), version);
          continue;
        }
        T* wtp = wt + phase_offset;
        const int total = g.C * depth;
        if (total > 0) {
          const LaunchShape shape = grid_stride_shape(total);
          launch(transpose_filter_phase_kernel<T>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr,
                 static_cast<const T*>(w), wtp, g, ph, pw, total);
        }
        pb.wt = wtp;
        if constexpr (kRunsType<Tag, T>) {
          if (version == kImplicitGemmPipelinedVersion) {
            run_pipelined_columns<T, Tag>(pb, {phase_patch(g, ph, pw), pb.dy, wtp, depth, 0},
                                          static_cast<int>(d.groups));
            phase_offset += total;
            continue;
          }
        }
        const staged::Staged<T> st{phase_patch(g, ph, pw), pb.dy, g.N * g.K * g.PQ, wt, g.K * g.Cg * g.RS,
                                   phase_offset, 0, depth};
        phase_offset += total;
        run_staged_columns<T>(pb, st, g.N, static_cast<int>(d.groups), aligned16({dy, wt}));
      }
  });
}

template <class Tag>
void backward_weights_with(DType dtype, const Conv2dDesc& d, const void* x, const void* dy, void* dw, void* workspace,
                           int version) {
  register_conv2d_implicit_gemm_family();
  check_call("conv2d_implicit_gemm backward-weights", dtype, d, version, {x, dy, dw});
  const std::size_t needed = conv2d_implicit_gemm_workspace_bytes(dtype, d, ConvPass::backward_weights, version);
  CK_CHECK(needed == 0 || workspace != nullptr, "conv2d_implicit_gemm backward-weights: needs ", needed,
           " bytes of workspace but workspace is null; descriptor ", d.str());
  const Geometry g = geometry(d);
  const Split split = version == kImplicitGemmSimpleVersion ? Split{} : weight_split(dtype, d, version);
  const int dw_elems = g.K * g.Cg * g.RS;
  dispatch_floating(dtype, "conv2d_implicit_gemm backward-weights", [&](auto t) {
    using T = decltype(t);
    T* out = split.slices > 1 ? static_cast<T*>(workspace) : static_cast<T*>(dw);
    const BackwardWeightsProblem<T> pb{g, static_cast<const T*>(x), static_cast<const T*>(dy), out,
                                       split.slices > 1 ? dw_elems : 0, g.Kg, g.Cg * g.RS, g.N * g.PQ};
    if constexpr (kRunsType<Tag, T>) {
      if (version == kImplicitGemmPipelinedVersion) {
        run_pipelined_positions<T, Tag>(pb, {image_patch(g), pb.x, pb.dy, 0, g.K}, static_cast<int>(d.groups), split);
        return;
      }
    }
    if (version != kImplicitGemmStagedVersion) {
      run_problem<T>(pb, static_cast<int>(d.groups), version, split);
      return;
    }
    if (pb.M == 0 || pb.cols == 0) return;
    const staged::Staged<T> st{image_patch(g), pb.x, g.N * g.C * g.HW, pb.dy, g.N * g.K * g.PQ, 0, g.K * g.PQ, g.PQ};
    const int col_tiles = static_cast<int>(ceil_div(pb.cols, staged::kTileN));
    const int total_steps = static_cast<int>(staged_weight_steps(d));
    const int steps_per_slice = split.len / staged::kTileK;
    const dim3 grid(static_cast<unsigned>(ceil_div(pb.M, staged::kTileM) * col_tiles),
                    static_cast<unsigned>(d.groups), static_cast<unsigned>(split.slices));
    if (aligned16({x, dy}))
      launch(staged::implicit_gemm_v4_staged_positions<T, BackwardWeightsProblem<T>, dev::kVec16<T>>, grid,
             dim3(staged::kThreads), 0, nullptr, pb, st, col_tiles, steps_per_slice, total_steps);
    else
      launch(staged::implicit_gemm_v4_staged_positions<T, BackwardWeightsProblem<T>, 1>, grid,
             dim3(staged::kThreads), 0, nullptr, pb, st, col_tiles, steps_per_slice, total_steps);
  });
  if (split.slices > 1) launch_sum_slices(dtype, workspace, split.slices, dw_elems, dw);
}

// Calls f with the MmaTag of precision p.
template <class F>
void with_mma_tag(TensorCorePrecision p, F&& f) {
  if (p == TensorCorePrecision::tf32) f(pipelined::MmaTag<TensorCorePrecision::tf32>{});
  else f(pipelined::MmaTag<TensorCorePrecision::bf16>{});
}

// ---- The tensor-core family's version 4, channels-last
// (kernels/conv2d_implicit_gemm_channels_last.cuh).

// One group's channels, padded to whole 16-byte vectors.
template <typename I>
I padded4(I channels) {
  return (channels + 3) / 4 * 4;
}

// The copies a pass makes, in elements, in the order they sit in the
// workspace: the image its taps gather from, channels-last (x forward and
// backward-weights, dy backward-data), then the operand read row by row
// (the filter taps-major; backward-weights: dy channels-last).
struct ChannelsLastCopies {
  std::int64_t image = 0, rows = 0;
};

ChannelsLastCopies channels_last_copies(const Conv2dDesc& d, ConvPass pass) {
  const std::int64_t Cg4 = padded4(d.C_per_group()), Kg4 = padded4(d.K_per_group());
  const std::int64_t x_copy = d.N * d.H * d.W * d.groups * Cg4, dy_copy = d.N * d.P() * d.Q() * d.groups * Kg4;
  if (pass == ConvPass::forward) return {x_copy, d.K * d.R * d.S * Cg4};
  if (pass == ConvPass::backward_data) return {dy_copy, d.C * d.R * d.S * Kg4};
  return {x_copy, dy_copy};
}

std::int64_t copies_bytes(const ChannelsLastCopies& c) { return (c.image + c.rows) * 4; }

// Backward-weights' split-K: version 5's rule, within what the copies leave
// of the workspace limit (the partials follow them).
Split channels_last_weight_split(const Conv2dDesc& d) {
  Conv2dDesc rest = d;
  const auto copies = static_cast<std::size_t>(copies_bytes(channels_last_copies(d, ConvPass::backward_weights)));
  rest.workspace_limit = d.workspace_limit > copies ? d.workspace_limit - copies : 0;
  return weight_split(DType::float32, rest, d.N * d.P() * d.Q(), kMaxPipelinedSlices);
}

constexpr int kTransposeTile = 32, kTransposeThreads = 256;

// Rounded to tf32 when `round` (the tensor-core kernel's stages then hold
// what its fragments read), else as it is.
__device__ __forceinline__ float maybe_tf32(float v, bool round) { return round ? dev::tf32_rounded(v) : v; }

// img[n][grp*Cg + c][hw] to out[n][hw][grp][c4] (c4 < Cg4, zeros from Cg on),
// a 32 x 32 tile (channels by pixels) per block through shared memory, so
// that both the reads (along hw) and the writes (along c4) are coalesced;
// rows of 33 keep the transposed reads off a single bank.
__global__ void __launch_bounds__(kTransposeThreads)
    to_channels_last_kernel(const float* __restrict__ img, float* __restrict__ out, int groups, int Cg, int Cg4,
                            int HW, int hw_tiles, int c_tiles, bool round) {
  __shared__ SharedArray<float[kTransposeTile][kTransposeTile + 1]> tile;
  const int block = static_cast<int>(blockIdx.x);
  const int hw0 = block % hw_tiles * kTransposeTile, rest = block / hw_tiles;
  const int c0 = rest % c_tiles * kTransposeTile, n = rest / c_tiles;
  const int lane = static_cast<int>(threadIdx.x) % 32, row = static_cast<int>(threadIdx.x) / 32;
  const int C4 = groups * Cg4;
  for (int i = row; i < kTransposeTile; i += kTransposeThreads / 32) {
    const int j = c0 + i, hw = hw0 + lane, grp = j / Cg4, c = j - grp * Cg4;
    const bool inside = j < C4 && hw < HW && c < Cg;
    tile[i][lane] = inside ? maybe_tf32(img[((n * groups + grp) * Cg + c) * HW + hw], round) : 0.0f;
  }
  __syncthreads();
  for (int i = row; i < kTransposeTile; i += kTransposeThreads / 32) {
    const int hw = hw0 + i, j = c0 + lane;
    if (hw < HW && j < C4) out[(n * HW + hw) * C4 + j] = tile[lane][i];
  }
}

void to_channels_last(const float* img, float* out, int N, int groups, int Cg, int HW, bool round) {
  const int Cg4 = padded4(Cg);
  const int hw_tiles = static_cast<int>(ceil_div(HW, kTransposeTile));
  const int c_tiles = static_cast<int>(ceil_div(groups * Cg4, kTransposeTile));
  launch(to_channels_last_kernel, dim3(static_cast<unsigned>(static_cast<std::int64_t>(N) * c_tiles * hw_tiles)),
         dim3(kTransposeThreads), 0, nullptr, img, out, groups, Cg, Cg4, HW, hw_tiles, c_tiles, round);
}

// The patch of an image copied channels-last: ps's taps and positions, its
// channels those of the copy (groups of Cg4).
staged::PatchShape channels_last_patch(staged::PatchShape ps, int groups, int Cg4) {
  ps.C = groups * Cg4;
  ps.Cg = Cg4;
  return ps;
}

// Forward's A: wr[row][rs][c4] = w[row][c][rs] (row = grp*Kg + k; zeros
// from Cg on).
__global__ void filter_taps_major_kernel(const float* __restrict__ w, float* __restrict__ wr, Geometry g, int Cg4,
                                         int total, bool round) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int row = i / (g.RS * Cg4), t = i - row * g.RS * Cg4, rs = t / Cg4, c = t - rs * Cg4;
    wr[i] = c < g.Cg ? maybe_tf32(w[(row * g.Cg + c) * g.RS + rs], round) : 0.0f;
  }
}

// One backward-data phase's A, taps-major: wt[grp*Cg + c][jr][js][kk4] =
// w[grp*Kg + kk][c][r][s], r and s the jr-th and js-th taps of the phase
// (zeros from Kg on).
__global__ void phase_filter_taps_major_kernel(const float* __restrict__ w, float* __restrict__ wt, Geometry g,
                                               StridePhase ph, StridePhase pw, int Kg4, int total, bool round) {
  const int depth = ph.taps * pw.taps * Kg4;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int row = i / depth, t = i - row * depth, tap = t / Kg4, kk = t - tap * Kg4;
    const int jr = tap / pw.taps, js = tap - jr * pw.taps, grp = row / g.Cg, c = row - grp * g.Cg;
    const int r = ph.tap_first + jr * ph.tap_step, s = pw.tap_first + js * pw.tap_step;
    wt[i] = kk < g.Kg ? maybe_tf32(w[((grp * g.Kg + kk) * g.Cg + c) * g.RS + r * g.S + s], round) : 0.0f;
  }
}

template <TensorCorePrecision P, class Problem>
void run_channels_last_in(const Problem& pb, const channels_last::Operands& op, int groups) {
  with_pipelined_tile(pb.M, pb.cols, groups, 1, [&](auto cfg) {
    using Cfg = decltype(cfg);
    const int n_tiles = static_cast<int>(ceil_div(pb.cols, Cfg::BlockTile::kN));
    const dim3 grid(static_cast<unsigned>(ceil_div(pb.M, Cfg::BlockTile::kM) * n_tiles),
                    static_cast<unsigned>(groups));
    launch(channels_last::implicit_gemm_tc_v4_channels_last<Cfg, Problem, channels_last::RowMath<P, Cfg>>, grid,
           dim3(pipelined::kThreads), 0, nullptr, pb, op, n_tiles);
  });
}

// Version 5's tile: conv2d_implicit_gemm_wgmma_tile_rows' rows by 128.
template <class Problem>
void run_channels_last_wgmma(const Problem& pb, const channels_last::Operands& op, int groups) {
  const auto run = [&](auto tile) {
    using Tile = decltype(tile);
    const int n_tiles = static_cast<int>(ceil_div(pb.cols, Tile::BlockTile::kN));
    const dim3 grid(static_cast<unsigned>(ceil_div(pb.M, Tile::BlockTile::kM) * n_tiles),
                    static_cast<unsigned>(groups));
    const auto kernel = channels_last::implicit_gemm_tc_v5_wgmma<Tile, Problem>;
    allow_dynamic_shared(kernel, Tile::kSharedBytes);
    launch(kernel, grid, dim3(Tile::kThreads), Tile::kSharedBytes, nullptr, pb, op, n_tiles);
  };
  if (conv2d_implicit_gemm_wgmma_tile_rows(pb.M, pb.cols, groups) == channels_last::WgmmaTile<2>::BlockTile::kM)
    run(channels_last::WgmmaTile<2>{});
  else run(channels_last::WgmmaTile<1>{});
}

template <class Problem>
void run_channels_last(TensorCorePrecision precision, const Problem& pb, const channels_last::Operands& op,
                       int groups, ChannelsLastProduct product) {
  if (pb.M == 0 || pb.cols == 0) return;
  if (precision == TensorCorePrecision::tf32 && product == ChannelsLastProduct::wgmma)
    run_channels_last_wgmma(pb, op, groups);
  else if (precision == TensorCorePrecision::tf32) run_channels_last_in<TensorCorePrecision::tf32>(pb, op, groups);
  else run_channels_last_in<TensorCorePrecision::bf16>(pb, op, groups);
}

void check_channels_last_workspace(const char* op, const Conv2dDesc& d, ConvPass pass, const void* workspace) {
  const ChannelsLastCopies c = channels_last_copies(d, pass);
  CK_CHECK(copies_bytes(c) == 0 || workspace != nullptr, op, ": needs ", copies_bytes(c),
           " bytes of workspace but workspace is null; descriptor ", d.str());
  CK_CHECK(aligned16({workspace}), op, ": the workspace must be 16-byte aligned (the copies are read 16 bytes at a "
           "time); descriptor ", d.str());
}

}  // namespace

void launch_conv2d_implicit_gemm_forward(DType dtype, const Conv2dDesc& d, const void* x, const void* w,
                                         const void* b, void* y, int version) {
  forward_with<pipelined::SimtTag>(dtype, d, x, w, b, y, version);
}

void launch_conv2d_implicit_gemm_backward_data(DType dtype, const Conv2dDesc& d, const void* dy, const void* w,
                                               void* dx, void* workspace, int version) {
  backward_data_with<pipelined::SimtTag>(dtype, d, dy, w, dx, workspace, version);
}

void launch_conv2d_implicit_gemm_backward_weights(DType dtype, const Conv2dDesc& d, const void* x, const void* dy,
                                                  void* dw, void* workspace, int version) {
  backward_weights_with<pipelined::SimtTag>(dtype, d, x, dy, dw, workspace, version);
}

void launch_conv2d_implicit_gemm_pipelined_mma_forward(TensorCorePrecision precision, const Conv2dDesc& d,
                                                       const void* x, const void* w, const void* b, void* y) {
  with_mma_tag(precision, [&](auto tag) {
    forward_with<decltype(tag)>(DType::float32, d, x, w, b, y, kImplicitGemmPipelinedVersion);
  });
}

void launch_conv2d_implicit_gemm_pipelined_mma_backward_data(TensorCorePrecision precision, const Conv2dDesc& d,
                                                             const void* dy, const void* w, void* dx,
                                                             void* workspace) {
  with_mma_tag(precision, [&](auto tag) {
    backward_data_with<decltype(tag)>(DType::float32, d, dy, w, dx, workspace, kImplicitGemmPipelinedVersion);
  });
}

void launch_conv2d_implicit_gemm_pipelined_mma_backward_weights(TensorCorePrecision precision, const Conv2dDesc& d,
                                                                const void* x, const void* dy, void* dw,
                                                                void* workspace) {
  with_mma_tag(precision, [&](auto tag) {
    backward_weights_with<decltype(tag)>(DType::float32, d, x, dy, dw, workspace, kImplicitGemmPipelinedVersion);
  });
}

namespace {

// Whether backward-weights' copies (x and dy) fit 32-bit indices (kIndexLimit,
// whose headroom covers a stage's rounding of the depth and a grid-stride
// loop's last step past the end) and
// workspace_limit; where they do not, version 4's backward-weights runs
// version 3's, so that a batch too large for them keeps the other passes.
bool channels_last_weights_fit(const Conv2dDesc& d) {
  const ChannelsLastCopies c = channels_last_copies(d, ConvPass::backward_weights);
  return std::max(c.image, c.rows) <= kIndexLimit &&
         copies_bytes(c) <= static_cast<std::int64_t>(d.workspace_limit);
}

}  // namespace

std::string conv2d_implicit_gemm_channels_last_cannot_implement(const Conv2dDesc& d) {
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data}) {
    const ChannelsLastCopies c = channels_last_copies(d, pass);
    if (std::max(c.image, c.rows) > kIndexLimit)
      return detail::concat("the channels-last copy of ", conv_pass_name(pass), "'s operands has ",
                            std::max(c.image, c.rows), " elements, past 32-bit indices");
    const std::int64_t bytes = copies_bytes(c);
    if (bytes > static_cast<std::int64_t>(d.workspace_limit))
      return detail::concat(conv_pass_name(pass), "'s channels-last copies need ", bytes,
                            " bytes of workspace, over workspace_limit ", d.workspace_limit);
  }
  return {};
}

std::string conv2d_implicit_gemm_channels_last_wgmma_cannot_implement() {
  if (!device_runs_wgmma())
    return detail::concat("version 5 runs wgmma: ", why_no_wgmma());
  constexpr std::size_t bytes =
      std::max(channels_last::WgmmaTile<2>::kSharedBytes, channels_last::kWeightsSharedBytes);
  if (bytes > max_dynamic_shared_bytes())
    return detail::concat("version 5 needs ", bytes, " bytes of shared memory per block; this device offers ",
                          max_dynamic_shared_bytes());
  return {};
}

int conv2d_implicit_gemm_wgmma_tile_rows(std::int64_t M, std::int64_t cols, std::int64_t groups) {
  using Wide = channels_last::WgmmaTile<2>::BlockTile;
  using Narrow = channels_last::WgmmaTile<1>::BlockTile;
  static_assert(Wide::kN == Narrow::kN, "the two tiles differ in rows only");
  // Rows of 128 columns on the busiest SM, the blocks dealt out kSmCount at a time.
  const auto busiest = [&](std::int64_t rows) {
    return ceil_div(ceil_div(M, rows) * ceil_div(cols, Wide::kN) * groups, kSmCount) * rows;
  };
  return busiest(Wide::kM) <= busiest(Narrow::kM) ? Wide::kM : Narrow::kM;
}

std::size_t conv2d_implicit_gemm_channels_last_workspace_bytes(const Conv2dDesc& d, ConvPass pass) {
  const auto copies = static_cast<std::size_t>(copies_bytes(channels_last_copies(d, pass)));
  if (pass != ConvPass::backward_weights) return copies;
  if (!channels_last_weights_fit(d))
    return conv2d_implicit_gemm_workspace_bytes(DType::float32, d, pass, kImplicitGemmPipelinedVersion);
  const Split split = channels_last_weight_split(d);
  const auto partials = static_cast<std::size_t>(d.K * d.C_per_group() * d.R * d.S) * sizeof(float);
  return copies + (split.slices > 1 ? static_cast<std::size_t>(split.slices) * partials : 0);
}

int conv2d_implicit_gemm_channels_last_weight_slices(const Conv2dDesc& d) {
  if (!channels_last_weights_fit(d))
    return conv2d_implicit_gemm_weight_slices(DType::float32, d, kImplicitGemmPipelinedVersion);
  return channels_last_weight_split(d).slices;
}

void launch_conv2d_implicit_gemm_channels_last_mma_forward(TensorCorePrecision precision, const Conv2dDesc& d,
                                                           const void* x, const void* w, const void* b, void* y,
                                                           void* workspace, ChannelsLastProduct product) {
  check_channels_last_workspace("conv2d_implicit_gemm_tensor_core forward (channels-last)", d, ConvPass::forward,
                                workspace);
  const Geometry g = geometry(d);
  const int Cg4 = padded4(g.Cg), groups = static_cast<int>(d.groups);
  float* img = static_cast<float*>(workspace);
  float* wr = img + channels_last_copies(d, ConvPass::forward).image;
  const bool round = precision == TensorCorePrecision::tf32;
  to_channels_last(static_cast<const float*>(x), img, g.N, groups, g.Cg, g.HW, round);
  const int total = g.K * g.RS * Cg4;
  const LaunchShape shape = grid_stride_shape(total);
  launch(filter_taps_major_kernel, dim3(shape.blocks), dim3(shape.threads), 0, nullptr, static_cast<const float*>(w),
         wr, g, Cg4, total, round);
  const ForwardProblem<float> pb{g,  static_cast<const float*>(x), static_cast<const float*>(w),
                                 static_cast<const float*>(b), static_cast<float*>(y), g.Kg, g.N * g.PQ,
                                 g.RS * Cg4};
  run_channels_last(precision, pb, {channels_last_patch(image_patch(g), groups, Cg4), img, wr, g.RS * Cg4}, groups,
                    product);
}

void launch_conv2d_implicit_gemm_channels_last_mma_backward_data(TensorCorePrecision precision, const Conv2dDesc& d,
                                                                 const void* dy, const void* w, void* dx,
                                                                 void* workspace, ChannelsLastProduct product) {
  check_channels_last_workspace("conv2d_implicit_gemm_tensor_core backward-data (channels-last)", d,
                                ConvPass::backward_data, workspace);
  const Geometry g = geometry(d);
  const int Kg4 = padded4(g.Kg), groups = static_cast<int>(d.groups);
  float* img = static_cast<float*>(workspace);
  float* wt = img + channels_last_copies(d, ConvPass::backward_data).image;
  const bool round = precision == TensorCorePrecision::tf32;
  to_channels_last(static_cast<const float*>(dy), img, g.N, groups, g.Kg, g.PQ, round);
  fill_unreached_phases(DType::float32, g, dx);
  for (int a = 0; a < g.sh; ++a)
    for (int b = 0; b < g.sw; ++b) {
      const StridePhase ph = stride_phase(a, g.sh, g.pt, g.dh, g.R, g.H);
      const StridePhase pw = stride_phase(b, g.sw, g.pl, g.dw, g.S, g.W);
      if (ph.count == 0 || pw.count == 0 || ph.taps == 0 || pw.taps == 0) continue;
      const int depth = ph.taps * pw.taps * Kg4, total = g.C * depth;
      const LaunchShape shape = grid_stride_shape(total);
      launch(phase_filter_taps_major_kernel, dim3(shape.blocks), dim3(shape.threads), 0, nullptr,
             static_cast<const float*>(w), wt, g, ph, pw, Kg4, total, round);
      // Only the problem's sizes and store are read: A and B are the copies.
      const BackwardDataProblem<float> pb{g,  static_cast<const float*>(dy), static_cast<const float*>(w), nullptr,
                                          static_cast<float*>(dx), ph, pw, g.Cg, g.N * ph.count * pw.count, depth};
      run_channels_last(precision, pb, {channels_last_patch(phase_patch(g, ph, pw), groups, Kg4), img, wt, depth},
                        groups, product);
      wt += total;
    }
}

void launch_conv2d_implicit_gemm_channels_last_mma_backward_weights(TensorCorePrecision precision,
                                                                    const Conv2dDesc& d, const void* x,
                                                                    const void* dy, void* dw, void* workspace,
                                                                    ChannelsLastProduct product) {
  if (!channels_last_weights_fit(d)) {
    launch_conv2d_implicit_gemm_pipelined_mma_backward_weights(precision, d, x, dy, dw, workspace);
    return;
  }
  check_channels_last_workspace("conv2d_implicit_gemm_tensor_core backward-weights (channels-last)", d,
                                ConvPass::backward_weights, workspace);
  const Geometry g = geometry(d);
  const int Cg4 = padded4(g.Cg), Kg4 = padded4(g.Kg), groups = static_cast<int>(d.groups);
  const ChannelsLastCopies c = channels_last_copies(d, ConvPass::backward_weights);
  float* img = static_cast<float*>(workspace);
  float* dyc = img + c.image;
  float* partials = dyc + c.rows;
  const bool wgmma = precision == TensorCorePrecision::tf32 && product == ChannelsLastProduct::wgmma;
  const bool round = precision == TensorCorePrecision::tf32;
  to_channels_last(static_cast<const float*>(x), img, g.N, groups, g.Cg, g.HW, round);
  to_channels_last(static_cast<const float*>(dy), dyc, g.N, groups, g.Kg, g.PQ, round);
  const Split split = channels_last_weight_split(d);
  const int dw_elems = g.K * g.Cg * g.RS;
  const channels_last::WeightsProblem pb{split.slices > 1 ? partials : static_cast<float*>(dw),
                                         split.slices > 1 ? dw_elems : 0,
                                         g.Kg,
                                         g.Cg,
                                         Cg4,
                                         g.RS,
                                         g.Kg,
                                         g.RS * Cg4,
                                         g.N * g.PQ};
  const channels_last::WeightsOperands op{channels_last_patch(image_patch(g), groups, Cg4), img, dyc, Kg4,
                                          groups * Kg4};
  const int len = split.len > 0 ? split.len : std::max(pb.depth, 1);
  if (wgmma) {
    using Tile = channels_last::WeightsTile;
    const int n_tiles = static_cast<int>(ceil_div(pb.cols, Tile::BlockTile::kN));
    const dim3 grid(static_cast<unsigned>(ceil_div(pb.M, Tile::BlockTile::kM) * n_tiles),
                    static_cast<unsigned>(groups), static_cast<unsigned>(split.slices));
    allow_dynamic_shared(channels_last::implicit_gemm_tc_v5_wgmma_weights, channels_last::kWeightsSharedBytes);
    launch(channels_last::implicit_gemm_tc_v5_wgmma_weights, grid, dim3(Tile::kThreads),
           channels_last::kWeightsSharedBytes, nullptr, pb, op, n_tiles, len);
  } else {
    with_mma_tag(precision, [&](auto tag) {
      constexpr TensorCorePrecision P = decltype(tag)::kPrecision;
      with_pipelined_tile(pb.M, pb.cols, groups, split.slices, [&](auto cfg) {
        using Cfg = decltype(cfg);
        const int n_tiles = static_cast<int>(ceil_div(pb.cols, Cfg::BlockTile::kN));
        const dim3 grid(static_cast<unsigned>(ceil_div(pb.M, Cfg::BlockTile::kM) * n_tiles),
                        static_cast<unsigned>(groups), static_cast<unsigned>(split.slices));
        launch(channels_last::implicit_gemm_tc_v4_channels_last_weights<Cfg, channels_last::WeightsMath<P, Cfg>>,
               grid, dim3(pipelined::kThreads), 0, nullptr, pb, op, n_tiles, len);
      });
    });
  }
  if (split.slices > 1) launch_sum_slices(DType::float32, partials, split.slices, dw_elems, dw);
}

}  // namespace convkit::CK_GPU_NS
