#pragma once
// Version 5 of the implicit-GEMM convolution (kernels/conv2d_implicit_gemm.cu
// runs it): GEMM v6's warp tiles and v5's cp.async pipeline
// (kernels/gemm_warp_tiled.cu), fed by gathering loaders whose indices step
// instead of divide. With MmaMath in place of SimtMath (below), the same
// kernels are version 3 of the tensor-core family
// (kernels/conv2d_implicit_gemm_tensor_core.cu).
//
// Version 3, measured on an H200 (docs/gpu/measured-h200.md), ran
// resnet18-cifar layer2.conv1's forward at 11.6 TFLOP/s, 17% of the FP32
// ceiling, and the stride-2 and 1x1 layers 1.3-4.4x behind cuDNN pass by
// pass. Three causes, one fix each:
//  1. Index arithmetic. v3 decodes every gathered element from its linear
//     (k, column) with five divisions by runtime values, about 20
//     instructions each: some 100 instructions per element loaded, against
//     16 multiply-adds per element of its tile. Here a loading thread keeps
//     one coordinate for the whole K loop (decoded once) and steps the
//     other by the K-step with a mixed-radix add: the digits (c, r, s) of a
//     filter tap or (n, p, q) of an output position, carried instead of
//     divided. About 12 instructions per element.
//  2. Latency. v3 loads, waits at a barrier, multiplies, waits again; with
//     two blocks per SM each K-step pays the loads' latency. Here every
//     gathered element is a cp.async copy of one element (zero-filled where
//     the tap falls in the padding or past the operand) into kStages = 4
//     buffers: the copies of three K-steps are in flight while the warps
//     multiply the fourth, with one barrier per K-step, as GEMM v5.
//  3. Shared-memory reads. v3's 4x4 thread tile reads 8 scalar words for
//     16 multiply-adds; the warp tiles here (kernels/warp_tile.cuh) read
//     16-byte fragments: 3 loads per 32 multiply-adds with the 4x8 tile.
// Under SimtMath, stores into the stages are conflict-free: rows are BX + 16
// bytes long, so a warp whose lanes walk x stores 32 consecutive words, and
// one whose lanes walk k (8 k by 4 x) stores to banks 4k + x, all 32
// different. MmaMath's rows and depths trade that for conflict-free fragment
// reads: loaders whose lanes walk k meet 2-way (its comment says why).
//
// Tiles, 128 threads each: 64x64x8 (2x2 warps of 32x32, 4x8 per thread), or
// 64x32x8 (warps of 32x16, 4x4 per thread) when 64x64 tiles would give the
// GPU's 132 SMs fewer than two blocks each, as GEMM v6 chooses; 32x64x8 (1x4
// warps of 32x16) when M is 32 or less, where a 64-row tile would be half
// empty (cifar10-cnn's 32-channel layers).
//
// Two kernels, by which way the K loop runs:
//   columns    forward and each backward-data stride phase: K runs over
//              filter taps (c, r, s) (a phase's taps (k, jr, js)), the columns
//              are output positions (n, p, q). A is row-major (the filter, or
//              the phase's transposed filter); B is the image gathered.
//   positions  backward-weights: K runs over output positions (n, p, q) of
//              every image, the columns are filter taps. A is dy, B the
//              image gathered; K is cut into split-K slices (blockIdx.z)
//              as version 3 cuts it but up to 256 of them (version 3 stops
//              at 32), summed afterwards in slice order: a first layer's
//              32 x 27 filter gradient over 131,072 positions is one tile,
//              which 32 slices leave on 32 of 132 SMs.
// Tried and reverted: launching backward-data's stride phases in one grid,
// each block picking its phase's problem from an array of kernel parameters
// (H200, lease 2, run 3). Backward-data gained nothing over the six stride-2
// layers (1.32 ms against run 2's 1.29 phase by phase), and forward, one
// problem through the same kernel, measured 20-25% slower than in run 2
// (0.277 against 0.221 ms on resnet18-cifar layer2.conv1; two runs, so
// partly noise). The likely cause: a problem indexed at run time is read
// from the parameter bank by address, not folded into the instructions.
// Both read the image through staged::PatchShape: element (c, r, s) at
// position (n, p, q) is img[n][grp*Cg + c][p*ah + oh + r*th][q*aw + ow + s*tw].
#include <cstdint>

#include "convkit/sim/cuda_compat.h"
#include "kernels/async_copy.cuh"
#include "kernels/conv2d_implicit_gemm_staged.cuh"
#include "kernels/device_math.cuh"
#include "kernels/tensor_core.cuh"
#include "kernels/vector_access.cuh"
#include "kernels/warp_tile.cuh"

namespace convkit::CK_GPU_NS::pipelined {

using staged::PatchShape;
using namespace warp_tile;

using Tile64x64 = TileConfig<GemmShape<64, 64, 8>, WarpShape<32, 32>, ThreadShape<4, 8>, 4>;
using Tile64x32 = TileConfig<GemmShape<64, 32, 8>, WarpShape<32, 16>, ThreadShape<4, 4>, 4>;
using Tile32x64 = TileConfig<GemmShape<32, 64, 8>, WarpShape<32, 16>, ThreadShape<4, 4>, 4>;
constexpr int kThreads = 128;
constexpr int kStages = 4;
static_assert(Tile64x64::kThreads == kThreads && Tile64x32::kThreads == kThreads && Tile32x64::kThreads == kThreads,
              "one block size");

// How a block multiplies its stages, and where each accumulator goes: the
// loaders and the pipeline are the same for both.
//   SimtMath  version 5: the FMA warp tiles of warp_tile.cuh, each thread a
//             ThreadShape of T accumulators; stages of 8 k.
//   MmaMath   the tensor-core version (conv2d_implicit_gemm_tensor_core v3):
//             each warp's tile as 16x8 mma.sync tiles of precision P, the
//             float32 stages rounded (tf32) or packed (bf16) as the
//             fragments are read; stages of one mma k-step (8 k for tf32, 16
//             for bf16).
// Each names its stage depth (kTileK) and its rows' padding in elements
// (kPad): SIMT reads 16-byte fragments along a row and pads by 16 bytes;
// tf32 fragments read element (k = t, x = g) of the k-major stage, at bank
// t * row + g, which is conflict-free when the row is 8 mod 32 words; bf16
// reads rows 2t and 2t + 1, conflict-free at 4 mod 32. The price is on the
// stores of loaders whose lanes walk k: tf32's 8 k by 4 x land on banks
// 8k + x, bf16's 16 k by 2 x on 4k + x, k and k + 4 (or k + 8) together:
// 2-way.
template <typename T, class Cfg>
struct SimtMath {
  static constexpr int kTileK = Cfg::BlockTile::kK;
  static constexpr int kPad = dev::kVec16<T>;
  using Acc = T[Cfg::ThreadTile::kM][Cfg::ThreadTile::kN];
  ThreadOrigin<T, Cfg> o;

  // Whether any of this thread's outputs lies inside the M x cols product.
  __device__ __forceinline__ bool live(int m0, int n0, int M, int cols) const {
    return m0 + o.tm0 < M && n0 + o.tn0 < cols;
  }
  template <int RowA, int RowB>
  __device__ __forceinline__ void multiply(const T* as, const T* bs, Acc& acc) const {
    multiply_stage<T, Cfg, RowA, RowB>(as, bs, o, acc);
  }
  // Calls out(m, col, value) for each accumulator inside the product.
  template <class Out>
  __device__ __forceinline__ void each_output(int m0, int n0, int M, int cols, const Acc& acc, Out&& out) const {
    CK_UNROLL
    for (int i = 0; i < Cfg::ThreadTile::kM; ++i)
      CK_UNROLL
      for (int j = 0; j < Cfg::ThreadTile::kN; ++j) {
        const int m = m0 + o.row(i), c = n0 + o.col(j);
        if (m < M && c < cols) out(m, c, acc[i][j]);
      }
  }
  // The accumulators into the block tile tile[m][col] (rows of Pitch), in
  // 16-byte stores. A row of kOutPad extra elements puts the rows 4 lanes
  // apart 16 banks apart, so each 8-lane wavefront fills 8 distinct
  // 16-byte bank groups.
  static constexpr int kOutPad = dev::kVec16<T>;
  template <int Pitch>
  __device__ __forceinline__ void stage_outputs(T* tile, const Acc& acc) const {
    constexpr int V = dev::kVec16<T>;
    CK_UNROLL
    for (int i = 0; i < Cfg::ThreadTile::kM; ++i)
      CK_UNROLL
      for (int g = 0; g < Cfg::ThreadTile::kN / V; ++g)
        dev::store16(tile + o.row(i) * Pitch + o.col(g * V), acc[i] + g * V);
  }
};

// The warp tiles on mma.sync in precision P, from k-major stages of
// float32 converted as the fragments are read (Rounded: the copies rounded
// the tf32 values already, so tf32 words are read as they are).
template <TensorCorePrecision P, class Cfg, bool Rounded = false>
struct MmaMath {
  static constexpr int kTileK = kMmaStepK<P>;
  static constexpr int kPad = P == TensorCorePrecision::tf32 ? 8 : 4;
  static constexpr int kMmaM = Cfg::WarpTile::kM / 16, kMmaN = Cfg::WarpTile::kN / 8;
  static_assert(Cfg::WarpTile::kM % 16 == 0 && Cfg::WarpTile::kN % 8 == 0, "warp tiles of whole mma tiles");
  using Acc = float[kMmaM][kMmaN][4];
  int wm, wn, lane, group, tig;

  __device__ __forceinline__ MmaMath() {
    const int warp = static_cast<int>(threadIdx.x) / 32;
    lane = static_cast<int>(threadIdx.x) % 32;
    wm = warp / Cfg::kWarpsN * Cfg::WarpTile::kM;
    wn = warp % Cfg::kWarpsN * Cfg::WarpTile::kN;
    group = lane / 4;
    tig = lane % 4;
  }
  // Warp-uniform, as mma.sync needs: whether the warp's tile meets the product.
  __device__ __forceinline__ bool live(int m0, int n0, int M, int cols) const {
    return m0 + wm < M && n0 + wn < cols;
  }
  // The stages are k-major, s[k][x] in rows of RowA or RowB elements.
  template <int RowA, int RowB>
  __device__ __forceinline__ void multiply(const float* as, const float* bs, Acc& acc) const {
    std::uint32_t af[kMmaM][4], bf[kMmaN][2];
    CK_UNROLL
    for (int i = 0; i < kMmaM; ++i)
      CK_UNROLL
      for (int r = 0; r < 4; ++r)
        af[i][r] =
            dev::stage_word<P, true, RowA, Rounded>(as, wm + i * 16 + group + (r & 1) * 8, tig + (r >> 1) * 4);
    CK_UNROLL
    for (int j = 0; j < kMmaN; ++j)
      CK_UNROLL
      for (int r = 0; r < 2; ++r)
        bf[j][r] = dev::stage_word<P, true, RowB, Rounded>(bs, wn + j * 8 + group, tig + r * 4);
    CK_UNROLL
    for (int i = 0; i < kMmaM; ++i)
      CK_UNROLL
      for (int j = 0; j < kMmaN; ++j) dev::mma<P>(acc[i][j], af[i], bf[j]);
  }
  // Accumulator e of mma tile (i, j) sits at dev::mma_c_row/col of that tile.
  template <class Out>
  __device__ __forceinline__ void each_output(int m0, int n0, int M, int cols, const Acc& acc, Out&& out) const {
    CK_UNROLL
    for (int i = 0; i < kMmaM; ++i)
      CK_UNROLL
      for (int j = 0; j < kMmaN; ++j)
        CK_UNROLL
        for (int e = 0; e < 4; ++e) {
          const int m = m0 + wm + i * 16 + dev::mma_c_row(lane, e), c = n0 + wn + j * 8 + dev::mma_c_col(lane, e);
          if (m < M && c < cols) out(m, c, acc[i][j][e]);
        }
  }
  // The accumulators into the block tile tile[m][col] (rows of Pitch): each
  // lane's pairs (e = 0, 1 and 2, 3 sit side by side) in 8-byte stores. Rows
  // 8 banks apart (Pitch = 8 mod 32) give a half warp's 4 rows of 4 pairs 16
  // distinct bank pairs.
  static constexpr int kOutPad = 8;
  template <int Pitch>
  __device__ __forceinline__ void stage_outputs(float* tile, const Acc& acc) const {
    static_assert(Pitch % 32 == 8, "rows 8 banks apart");
    CK_UNROLL
    for (int i = 0; i < kMmaM; ++i)
      CK_UNROLL
      for (int j = 0; j < kMmaN; ++j)
        CK_UNROLL
        for (int h = 0; h < 2; ++h)
          dev::store8(tile + (wm + i * 16 + dev::mma_c_row(lane, 2 * h)) * Pitch + wn + j * 8 + dev::mma_c_col(lane, 0),
                      acc[i][j] + 2 * h);
  }
};

// A number in mixed radix: hi, then mid below mid_radix, then lo below
// lo_radix. (c, r, s) over (R, S) is a filter tap's k = (c*R + r)*S + s;
// (n, p, q) over (P, Q) an output position's n*P*Q + p*Q + q.
struct Digits {
  int hi, mid, lo;
};

__device__ __forceinline__ Digits to_digits(int v, int mid_radix, int lo_radix) {
  const int rest = v / lo_radix;
  return {rest / mid_radix, rest % mid_radix, v - rest * lo_radix};
}

// d += step, both in the same radix: two compares and no division.
__device__ __forceinline__ void add_digits(Digits& d, const Digits& step, int mid_radix, int lo_radix) {
  d.lo += step.lo;
  int carry = d.lo >= lo_radix;
  d.lo -= carry * lo_radix;
  d.mid += step.mid + carry;
  carry = d.mid >= mid_radix;
  d.mid -= carry * mid_radix;
  d.hi += step.hi + carry;
}

// The operands' addresses. The columns kernel reads A row-major: row
// grp*M + m at a + (grp*M + m)*a_ld. The positions kernel reads A as dy:
// A(m, (n, p, q)) = a[(n*a_channels + grp*M + m)*P*Q + p*Q + q].
template <typename T>
struct Operands {
  PatchShape ps;
  const T* img;
  const T* a;
  int a_ld;
  int a_channels;
};

// Where img[n][grp*Cg + c][h][w] is, or null when (h, w) falls in the
// padding (one unsigned compare per axis covers both sides).
template <typename T>
__device__ __forceinline__ const T* image_element(const Operands<T>& op, int grp, int n, int c, int h, int w) {
  const PatchShape& ps = op.ps;
  const bool inside = static_cast<unsigned>(h) < static_cast<unsigned>(ps.H) &&
                      static_cast<unsigned>(w) < static_cast<unsigned>(ps.W);
  if (!inside) return nullptr;
  return op.img + ((n * ps.C + grp * ps.Cg + c) * ps.H + h) * ps.W + w;
}

// One element's copy into a stage: from src, or zeros (reading nothing) when null.
template <typename T>
__device__ __forceinline__ void copy_element(T* dst, const T* src, const T* any) {
  dev::cp_async<sizeof(T)>(dst, src != nullptr ? src : any, src != nullptr ? static_cast<int>(sizeof(T)) : 0);
}

// Which Math a launcher asks for, before the tile is chosen.
struct SimtTag {
  template <typename T, class Cfg>
  using Math = SimtMath<T, Cfg>;
};
template <TensorCorePrecision P>
struct MmaTag {
  static constexpr TensorCorePrecision kPrecision = P;
  template <typename T, class Cfg>
  using Math = MmaMath<P, Cfg>;
};

// The shared memory of a tile: kStages of As[kTileK][BM + pad] and
// Bs[kTileK][BN + pad], k-major, with the Math's depth and padding, and
// after the last stage is consumed, the output tile Out[BM][BN + out pad]
// over the same bytes (kShared elements in all; Bs after As).
template <typename T, class Cfg, class Math>
struct StageArrays {
  static constexpr int kRowA = Cfg::BlockTile::kM + Math::kPad, kRowB = Cfg::BlockTile::kN + Math::kPad;
  static constexpr int kStageA = Math::kTileK * kRowA, kStageB = Math::kTileK * kRowB;
  static constexpr int kA = kStages * kStageA, kB = kStages * kStageB;
  static constexpr int kOutPitch = Cfg::BlockTile::kN + Math::kOutPad, kOut = Cfg::BlockTile::kM * kOutPitch;
  static constexpr int kShared = kA + kB > kOut ? kA + kB : kOut;
  static_assert(kA * sizeof(T) % 128 == 0, "Bs starts on the banks' period, as its own array would");
};

// The pipeline both kernels share: prologue, one barrier per K-step, the
// copies of step t + kStages - 1 issued before step t is multiplied.
// copy_step(stage) copies the next K-step (in order) into that stage.
template <typename T, class Cfg, class Math, class CopyStep>
__device__ __forceinline__ void run_pipeline(int k_steps, T* As, T* Bs, const Math& math, bool live,
                                             CopyStep&& copy_step, typename Math::Acc& acc) {
  using Arrays = StageArrays<T, Cfg, Math>;
  CK_UNROLL
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_steps) copy_step(s);
    dev::cp_async_commit();  // possibly empty: keeps the group count fixed
  }
  for (int t = 0; t < k_steps; ++t) {
    dev::cp_async_wait<kStages - 2>();  // step t has landed (for this thread)
    __syncthreads();                    // ... for all, and step t - 1 is consumed
    const int next = t + kStages - 1;
    if (next < k_steps) copy_step(next % kStages);
    dev::cp_async_commit();
    const int s = t % kStages;
    if (live)
      math.template multiply<Arrays::kRowA, Arrays::kRowB>(As + s * Arrays::kStageA, Bs + s * Arrays::kStageB, acc);
  }
  dev::cp_async_wait<0>();  // only empty groups are left
}

// The tile's results, through the problem's store (slice: the split-K
// slice), by way of the output tile in shared memory: a warp's accumulators
// span 8 to 16 rows of the product, and stored from there each request
// touched 16 to 32 sectors; read back row by row, a warp stores 32
// consecutive columns of one row (an output channel's consecutive positions
// in forward, a filter's consecutive taps in backward-weights). Called by
// every thread of the block, live or not (non-live accumulators are zeros
// that no store reads).
template <typename T, class Cfg, class Math, class Problem>
__device__ __forceinline__ void store_tile(const Problem& pb, int grp, int m0, int n0, int slice, const Math& math,
                                           const typename Math::Acc& acc, T* out) {
  using Arrays = StageArrays<T, Cfg, Math>;
  constexpr int BM = Cfg::BlockTile::kM, BN = Cfg::BlockTile::kN;
  __syncthreads();  // every warp is done with the stages the output tile reuses
  math.template stage_outputs<Arrays::kOutPitch>(out, acc);
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < BM * BN; i += Cfg::kThreads) {
    const int r = i / BN, c = i % BN;
    if (m0 + r < pb.M && n0 + c < pb.cols) pb.store(grp, m0 + r, n0 + c, slice, out[r * Arrays::kOutPitch + c]);
  }
}

// Forward and backward-data. blockIdx.x = m tile * n_tiles + column tile,
// blockIdx.y = group. Problem supplies M, cols, depth and
// store(grp, m, col, slice, acc).
template <typename T, class Cfg, class Problem, class Math = SimtMath<T, Cfg>>
__global__ void __launch_bounds__(kThreads, Cfg::kMinBlocks) implicit_gemm_v5_columns(Problem pb, Operands<T> op,
                                                                                     int n_tiles) {
  constexpr int BM = Cfg::BlockTile::kM, BN = Cfg::BlockTile::kN, kTileK = Math::kTileK;
  using Arrays = StageArrays<T, Cfg, Math>;
  __shared__ __align__(16) SharedArray<T[Arrays::kShared]> smem;
  T* const a_stages = smem;
  T* const b_stages = a_stages + Arrays::kA;
  const PatchShape& ps = op.ps;
  const int tid = threadIdx.x, grp = blockIdx.y;
  const int m0 = static_cast<int>(blockIdx.x) / n_tiles * BM, n0 = static_cast<int>(blockIdx.x) % n_tiles * BN;
  const Math math;
  const bool live = math.live(m0, n0, pb.M, pb.cols);

  // A, lanes along k: one k of the step, rows tid / 8 + 16i.
  constexpr int kARows = BM * kTileK / kThreads, kARowStep = kThreads / kTileK;
  const int ak = tid % kTileK;
  const T* arow[kARows];
  CK_UNROLL
  for (int i = 0; i < kARows; ++i) {
    const int m = m0 + tid / kTileK + i * kARowStep;
    arow[i] = m < pb.M ? op.a + (grp * pb.M + m) * op.a_ld : nullptr;
  }
  // B, lanes along the columns: one column (an output position) for the whole
  // loop, rows k = tid / BN + step*i, each stepping its tap's digits.
  constexpr int kBRows = BN * kTileK / kThreads, kBRowStep = kThreads / BN;
  const int bcol = tid % BN;
  const int col = n0 + bcol;
  const Digits pos = to_digits(col < pb.cols ? col : 0, ps.P, ps.Q);
  const int hp = pos.mid * ps.ah + ps.oh, wq = pos.lo * ps.aw + ps.ow;
  // A backward-data phase that no tap reaches has R or S 0 (and depth 0).
  const int R = ps.R > 0 ? ps.R : 1, S = ps.S > 0 ? ps.S : 1;
  Digits tap[kBRows];
  CK_UNROLL
  for (int i = 0; i < kBRows; ++i) tap[i] = to_digits(tid / BN + i * kBRowStep, R, S);
  const Digits tap_step = to_digits(kTileK, R, S);

  int k0 = 0;
  auto copy_step = [&](int stage) {
    T* as = a_stages + stage * Arrays::kStageA;
    T* bs = b_stages + stage * Arrays::kStageB;
    const int k = k0 + ak;
    CK_UNROLL
    for (int i = 0; i < kARows; ++i)
      copy_element(as + ak * Arrays::kRowA + tid / kTileK + i * kARowStep,
                   arow[i] != nullptr && k < pb.depth ? arow[i] + k : nullptr, op.a);
    CK_UNROLL
    for (int i = 0; i < kBRows; ++i) {
      const int kk = tid / BN + i * kBRowStep;
      const T* src = col < pb.cols && k0 + kk < pb.depth
                         ? image_element(op, grp, pos.hi, tap[i].hi, hp + tap[i].mid * ps.th, wq + tap[i].lo * ps.tw)
                         : nullptr;
      copy_element(bs + kk * Arrays::kRowB + bcol, src, op.img);
      add_digits(tap[i], tap_step, R, S);
    }
    k0 += kTileK;
  };
  typename Math::Acc acc = {};
  run_pipeline<T, Cfg>((pb.depth + kTileK - 1) / kTileK, a_stages, b_stages, math, live, copy_step, acc);
  store_tile<T, Cfg>(pb, grp, m0, n0, 0, math, acc, a_stages);
}

// Backward-weights. blockIdx.x = m tile * n_tiles + column tile, blockIdx.y
// = group, blockIdx.z = split-K slice of slice_len positions (a multiple of
// kTileK). Problem supplies M, cols (C/groups*R*S), depth (N*P*Q) and store.
template <typename T, class Cfg, class Problem, class Math = SimtMath<T, Cfg>>
__global__ void __launch_bounds__(kThreads, Cfg::kMinBlocks) implicit_gemm_v5_positions(Problem pb, Operands<T> op,
                                                                                       int n_tiles, int slice_len) {
  constexpr int BM = Cfg::BlockTile::kM, BN = Cfg::BlockTile::kN, kTileK = Math::kTileK;
  using Arrays = StageArrays<T, Cfg, Math>;
  __shared__ __align__(16) SharedArray<T[Arrays::kShared]> smem;
  T* const a_stages = smem;
  T* const b_stages = a_stages + Arrays::kA;
  const PatchShape& ps = op.ps;
  const int tid = threadIdx.x, grp = blockIdx.y;
  const int m0 = static_cast<int>(blockIdx.x) / n_tiles * BM, n0 = static_cast<int>(blockIdx.x) % n_tiles * BN;
  const int k_begin = static_cast<int>(blockIdx.z) * slice_len;
  const int k_end = pb.depth < k_begin + slice_len ? pb.depth : k_begin + slice_len;
  const Math math;
  const bool live = math.live(m0, n0, pb.M, pb.cols);
  const int PQ = ps.P * ps.Q;

  // Both operands' lanes walk the positions: one position of the step per
  // thread, stepping its digits (n, p, q); rows tid / 8 + 16i.
  constexpr int kRowStep = kThreads / kTileK;
  constexpr int kARows = BM * kTileK / kThreads, kBRows = BN * kTileK / kThreads;
  const int kk = tid % kTileK;
  Digits pos = to_digits(k_begin + kk, ps.P, ps.Q);
  const Digits pos_step = to_digits(kTileK, ps.P, ps.Q);
  int arow[kARows];  // dy's channel, or -1 past M
  CK_UNROLL
  for (int i = 0; i < kARows; ++i) {
    const int m = m0 + tid / kTileK + i * kRowStep;
    arow[i] = m < pb.M ? grp * pb.M + m : -1;
  }
  // B's rows are filter taps, fixed: channel (or -1 past the columns) and shifts.
  int bc[kBRows], brh[kBRows], bsw[kBRows];
  CK_UNROLL
  for (int i = 0; i < kBRows; ++i) {
    const int c = n0 + tid / kTileK + i * kRowStep;
    const Digits t = to_digits(c < pb.cols ? c : 0, ps.R, ps.S);
    bc[i] = c < pb.cols ? t.hi : -1;
    brh[i] = t.mid * ps.th;
    bsw[i] = t.lo * ps.tw;
  }

  int k0 = k_begin;
  auto copy_step = [&](int stage) {
    T* as = a_stages + stage * Arrays::kStageA;
    T* bs = b_stages + stage * Arrays::kStageB;
    const bool k_ok = k0 + kk < k_end;
    const int hp = pos.mid * ps.ah + ps.oh, wq = pos.lo * ps.aw + ps.ow;
    const int pq = pos.mid * ps.Q + pos.lo;
    CK_UNROLL
    for (int i = 0; i < kARows; ++i)
      copy_element(as + kk * Arrays::kRowA + tid / kTileK + i * kRowStep,
                   k_ok && arow[i] >= 0 ? op.a + (pos.hi * op.a_channels + arow[i]) * PQ + pq : nullptr, op.a);
    CK_UNROLL
    for (int i = 0; i < kBRows; ++i)
      copy_element(bs + kk * Arrays::kRowB + tid / kTileK + i * kRowStep,
                   k_ok && bc[i] >= 0 ? image_element(op, grp, pos.hi, bc[i], hp + brh[i], wq + bsw[i]) : nullptr,
                   op.img);
    add_digits(pos, pos_step, ps.P, ps.Q);
    k0 += kTileK;
  };
  typename Math::Acc acc = {};
  const int k_steps = k_end > k_begin ? (k_end - k_begin + kTileK - 1) / kTileK : 0;
  run_pipeline<T, Cfg>(k_steps, a_stages, b_stages, math, live, copy_step, acc);
  store_tile<T, Cfg>(pb, grp, m0, n0, static_cast<int>(blockIdx.z), math, acc, a_stages);
}

}  // namespace convkit::CK_GPU_NS::pipelined
