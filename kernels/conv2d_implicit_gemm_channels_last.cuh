#pragma once
// Version 4 of the tensor-core implicit-GEMM convolution
// (kernels/conv2d_implicit_gemm_tensor_core.cu): forward and each
// backward-data stride phase on channels-last copies of the image, so that
// every gather is a 16-byte cp.async of 4 channels instead of a 4-byte one
// per element. kernels/conv2d_implicit_gemm.cu makes the copies and launches
// it (launch_conv2d_implicit_gemm_channels_last_mma_*).
//
// Why. What an H200 measured of version 3 (docs/gpu/measured-h200.md, third
// lease): in tf32 it ran the stride-2 3x3 layers 1.4-3.1x behind cuDNN's
// tf32 and only 1.1-1.3x ahead of the strict FP32 kernel it shares its
// loaders with, so the loaders, not the tensor cores, set its pace. Counted
// per warp and stage of version 3's 64x64 tile: 8 mma against ~100
// instructions of gathering (4 elements of B per thread, each a tap step, a
// bounds check, an address and a 4-byte copy; 4 of A) and ~30 of fragment
// reads, barrier and loop: some 17 instructions per mma where mma.sync's
// rate on Hopper leaves room for about 4. NCHW puts a pixel's channels a
// plane apart, so no two elements of a gathered column are adjacent;
// channels-last puts them side by side, and cuDNN's own NCHW kernels copy
// to it for the same reason.
//
// What changes against version 3:
//  - Operands. The image (x forward, dy backward-data) is copied once per
//    pass to img[n][h][w][grp][c4], each group's channels padded with zeros
//    to a multiple of 4 (Cg4); the filter to rows of taps-major k =
//    (r, s, c4) (forward: row k_out; backward-data: row c_in, a phase's taps
//    only, as version 5's phase transpose). The padded channels are zeros
//    on both sides, so they add nothing; a vector never straddles a tap.
//    In tf32 the copies also round (cvt.rna), once per element, so the
//    fragment reads convert nothing: the rounding rides on a pass that
//    exists anyway, where GEMM v5's rounding of landed stages cost a pass
//    over shared memory of its own.
//  - Gathers. Per stage a thread copies 16 bytes of A and of B per row it
//    owns (2 rows of each with the 64-wide tiles): A at a row-major address,
//    B at one column's (n, p, q) decoded once and the stage's tap (r, s, c),
//    one mixed-radix step per stage shared by the thread's columns, one
//    bounds check per 4 elements.
//  - Stages. x-major, s[x][k] in rows of kTileK = 16 floats (two tf32 mma
//    k-steps, one bf16 k-step), so a 16-byte copy lands whole; each row's
//    four 16-byte vectors are permuted by an XOR swizzle of the row (Swizzle
//    below) so that the fragment reads, which walk 8 rows at a time, meet
//    32 distinct banks, and each 8-lane phase of the copies' stores (two
//    rows) fills all 32.
//  - Barriers: one per 16 k, where version 3's tf32 pays one per 8.
// Unchanged: the block tiles, warp tiles and mma tiling (MmaMath), the
// 4-stage pipeline and the output tile staged through shared memory
// (conv2d_implicit_gemm_pipelined.cuh), the problems' stores.
//
// The price: the copies. Forward reads and writes the image once more
// (x's bytes twice, about 2% of the multiply's time on resnet18-cifar's
// 3x3 layers at batch 128 if the copy runs at HBM speed), backward-data dy.
// Accumulation runs over k in (r, s, c) order, not version 3's (c, r, s),
// so the two agree within the rounding bound, not bit for bit.
//
// Backward-weights (implicit_gemm_tc_v4_channels_last_weights below) sums
// over the output positions, which no layout makes contiguous in both
// operands. So it turns the vectors the other way: x and dy are both copied
// channels-last, and a 16-byte vector is 4 consecutive dy channels (A's m)
// or 4 consecutive x channels of one tap (B's columns, taps-major (r, s, c4))
// at one position; the stages are k-major, s[k][x], as version 3's
// (MmaMath), each stage row a position, 16 deep (WeightsMath). With the
// 64-wide tiles a thread copies two vectors per operand and stage where
// version 3 copies 4 elements of each per 8 positions, 4 bytes at a time.
#include <algorithm>
#include <cstdint>

#include "convkit/sim/cuda_compat.h"
#include "kernels/async_copy.cuh"
#include "kernels/conv2d_implicit_gemm_pipelined.cuh"
#include "kernels/tensor_core.cuh"
#include "kernels/warpgroup_mma.cuh"
#include "kernels/warpgroup_stage.cuh"

namespace convkit::CK_GPU_NS::channels_last {

using pipelined::Digits;
using pipelined::kThreads;
using staged::PatchShape;

// Elements of k per stage, and per 16-byte vector.
inline constexpr int kStageK = 16, kVec = 4;

// Where element (x, k) of an x-major stage sits: vector k / 4 of row x
// XOR the row's swizzle. tf32 fragments read one word at (x = g, k = t)
// for the 8 groups g of a warp: rows alternate bank halves (16 floats a
// row) and the swizzle (x >> 1) & 3 gives the four rows of each half four
// different vectors. bf16 reads 8-byte pairs, a half warp (4 groups) at a
// time, at k = 2t: rows 0 and 2 of a half warp must take different vector
// pairs, which (x >> 1 & 1) * 2 does.
template <TensorCorePrecision P>
__device__ __forceinline__ int swizzled(int x, int k) {
  const int swizzle = P == TensorCorePrecision::tf32 ? (x >> 1) & 3 : ((x >> 1) & 1) << 1;
  return x * kStageK + ((((k >> 2) ^ swizzle)) << 2) + (k & 3);
}

// MmaMath with x-major swizzled stages of kStageK: two mma k-steps per
// stage in tf32, one in bf16. A fragment word of row x sits at x * kStageK
// plus an offset that depends on the lane and on which word of which k-step
// it is, not on the row: rows 8 apart share a swizzle. So each lane works
// out its kSlots offsets once, and every fragment read is a row's constant
// offset from one of them (without this, nvcc recomputed the swizzled
// addresses in every stage: 386 instructions per 16 mma in tf32, 2 of 3
// of them address arithmetic).
template <TensorCorePrecision P, class Cfg>
struct RowMath : pipelined::MmaMath<P, Cfg> {
  using Base = pipelined::MmaMath<P, Cfg>;
  using typename Base::Acc;
  // pipelined::StageArrays sizes a stage as kTileK rows of BX + kPad: with
  // no padding that is BX rows of kTileK, this layout's size.
  static constexpr int kTileK = kStageK;
  static constexpr int kPad = 0;
  static constexpr TensorCorePrecision kPrecision = P;
  static constexpr int kSteps = kStageK / kMmaStepK<P>, kSlots = 2 * kSteps;
  // slot[2 * step + h]: word tig + 4h of k-step `step` in row `group`.
  int slot[kSlots];

  __device__ __forceinline__ RowMath() {
    CK_UNROLL
    for (int step = 0; step < kSteps; ++step)
      CK_UNROLL
      for (int h = 0; h < 2; ++h)
        slot[2 * step + h] =
            swizzled<P>(this->group, step * kMmaStepK<P> + kElementsPerWord<P> * (this->tig + 4 * h));
  }

  // A fragment word: in tf32 the copies rounded the operands already (the
  // stages hold tf32 values), so the word is the float's bits; bf16 pairs
  // are packed here.
  __device__ __forceinline__ static std::uint32_t word(const float* p) {
    if constexpr (P == TensorCorePrecision::tf32) {
      return __float_as_uint(*p);
    } else {
      return dev::word_at<P>(p);
    }
  }

  template <int, int>
  __device__ __forceinline__ void multiply(const float* as, const float* bs, Acc& acc) const {
    const float* a = as + this->wm * kStageK;
    const float* b = bs + this->wn * kStageK;
    CK_UNROLL
    for (int step = 0; step < kSteps; ++step) {
      std::uint32_t af[Base::kMmaM][4], bf[Base::kMmaN][2];
      // a0..a3: rows group, group + 8, words tig, tig + 4; b0, b1: words tig, tig + 4.
      CK_UNROLL
      for (int i = 0; i < Base::kMmaM; ++i)
        CK_UNROLL
        for (int r = 0; r < 4; ++r)
          af[i][r] = word(a + (i * 16 + (r & 1) * 8) * kStageK + slot[2 * step + (r >> 1)]);
      CK_UNROLL
      for (int j = 0; j < Base::kMmaN; ++j)
        CK_UNROLL
        for (int r = 0; r < 2; ++r) bf[j][r] = word(b + j * 8 * kStageK + slot[2 * step + r]);
      CK_UNROLL
      for (int i = 0; i < Base::kMmaM; ++i)
        CK_UNROLL
        for (int j = 0; j < Base::kMmaN; ++j) dev::mma<P>(acc[i][j], af[i], bf[j]);
    }
  }
};

// The operands: A row-major (row grp*M + m at a + (grp*M + m) * a_ld, k
// contiguous, a_ld and the depth multiples of 4); the image channels-last,
// img[n][h][w][grp][c4] with ps.C = groups * Cg4 and ps.Cg = Cg4, and the
// taps (r, s) of ps walking it as version 5's PatchShape does.
struct Operands {
  PatchShape ps;
  const float* img;
  const float* a;
  int a_ld;
};

// Forward and backward-data: blockIdx.x = m tile * n_tiles + column tile,
// blockIdx.y = group. k = (r*S + s)*Cg4 + c.
template <class Cfg, class Problem, class Math>
__global__ void __launch_bounds__(kThreads, Cfg::kMinBlocks) implicit_gemm_tc_v4_channels_last(Problem pb,
                                                                                              Operands op,
                                                                                              int n_tiles) {
  constexpr int BM = Cfg::BlockTile::kM, BN = Cfg::BlockTile::kN;
  using Arrays = pipelined::StageArrays<float, Cfg, Math>;
  static_assert(Arrays::kStageA == BM * kStageK && Arrays::kStageB == BN * kStageK, "x-major stages");
  __shared__ __align__(16) SharedArray<float[Arrays::kShared]> smem;
  float* const a_stages = smem;
  float* const b_stages = a_stages + Arrays::kA;
  const PatchShape& ps = op.ps;
  const int tid = threadIdx.x, grp = blockIdx.y;
  const int m0 = static_cast<int>(blockIdx.x) / n_tiles * BM, n0 = static_cast<int>(blockIdx.x) % n_tiles * BN;
  const Math math;
  const bool live = math.live(m0, n0, pb.M, pb.cols);

  // Each thread: vector kv of the stage's 4, rows tid / 4 + 32i of A and columns
  // tid / 4 + 32i of B.
  constexpr int kPerRow = kStageK / kVec, kRowStep = kThreads / kPerRow;
  constexpr int kARows = BM / kRowStep, kBCols = BN / kRowStep;
  static_assert(kARows >= 1 && kBCols >= 1, "a tile of at least 32 rows and columns");
  const int kv = tid % kPerRow;
  const float* arow[kARows];
  CK_UNROLL
  for (int i = 0; i < kARows; ++i) {
    const int m = m0 + tid / kPerRow + i * kRowStep;
    arow[i] = m < pb.M ? op.a + (grp * pb.M + m) * op.a_ld : nullptr;
  }
  // A column's pixel, decoded once: where its image starts, and the row and
  // column tap (0, 0) reads (past the product, a row no tap brings inside).
  constexpr int kNeverInside = -(1 << 30);
  const float* bimg[kBCols];
  int bh[kBCols], bw[kBCols];
  CK_UNROLL
  for (int i = 0; i < kBCols; ++i) {
    const int col = n0 + tid / kPerRow + i * kRowStep;
    const Digits pos = pipelined::to_digits(col < pb.cols ? col : 0, ps.P, ps.Q);
    bimg[i] = op.img + pos.hi * ps.H * ps.W * ps.C + grp * ps.Cg;
    bh[i] = col < pb.cols ? pos.mid * ps.ah + ps.oh : kNeverInside;
    bw[i] = pos.lo * ps.aw + ps.ow;
  }
  // The tap (r, s, c) of this thread's vector, stepped by a stage each time.
  const int S = ps.S > 0 ? ps.S : 1;
  Digits tap = pipelined::to_digits(kv * kVec, S, ps.Cg);
  const Digits tap_step = pipelined::to_digits(kStageK, S, ps.Cg);

  int k = kv * kVec;  // this thread's vector's k in the stage being copied
  auto copy_step = [&](int stage) {
    float* as = a_stages + stage * Arrays::kStageA;
    float* bs = b_stages + stage * Arrays::kStageB;
    const bool k_ok = k < pb.depth;
    CK_UNROLL
    for (int i = 0; i < kARows; ++i) {
      const int row = tid / kPerRow + i * kRowStep;
      const bool copy = k_ok && arow[i] != nullptr;
      dev::cp_async<16>(as + swizzled<Math::kPrecision>(row, kv * kVec), copy ? arow[i] + k : op.a,
                        copy ? 16 : 0);
    }
    const int tr = tap.hi * ps.th, ts = tap.mid * ps.tw;
    CK_UNROLL
    for (int i = 0; i < kBCols; ++i) {
      const int x = tid / kPerRow + i * kRowStep;
      const int h = bh[i] + tr, w = bw[i] + ts;
      const bool copy = k_ok && static_cast<unsigned>(h) < static_cast<unsigned>(ps.H) &&
                        static_cast<unsigned>(w) < static_cast<unsigned>(ps.W);
      dev::cp_async<16>(bs + swizzled<Math::kPrecision>(x, kv * kVec),
                        copy ? bimg[i] + (h * ps.W + w) * ps.C + tap.lo : op.img, copy ? 16 : 0);
    }
    pipelined::add_digits(tap, tap_step, S, ps.Cg);
    k += kStageK;
  };
  typename Math::Acc acc = {};
  pipelined::run_pipeline<float, Cfg>((pb.depth + kStageK - 1) / kStageK, a_stages, b_stages, math, live, copy_step,
                                      acc);
  pipelined::store_tile<float, Cfg>(pb, grp, m0, n0, 0, math, acc, a_stages);
}

// ---------------------------------------------------------------------------
// Version 5, wgmma (sm_90a): version 4's passes, the same copies and
// (forward, backward-data) the same gathers, multiplied by Hopper's warpgroup
// instruction instead of mma.sync (the step GEMM took from its v4 to v6,
// kernels/gemm_tensor_core.cu, for the reason given there: mma.sync is
// bound by instruction issue; one m64n128k8 wgmma is 64 mma.sync's work from
// one issue, reading both operands from shared memory by descriptor).
//   Why this product fits: tf32 wgmma reads K-major operands only. Version
//     4's operands are both k-contiguous: the filter rows taps-major (k =
//     (r, s, c4) along a row) and the image channels-last (a column's 4
//     channels of one tap side by side). So version 4's 16-byte gathers land
//     as wgmma reads them, and its copies already rounded to tf32, so the
//     stages need no pass of their own (GEMM v6 rounds each stage in place).
//   Layout: each operand's stage is rows of 32 floats (128 bytes) in the
//     128-byte swizzle, 8 k-slices of 4 floats per row; thread t copies unit
//     t % 8 of rows t / 8 + (threads / 8) i, so a quarter warp fills one row:
//     conflict-free stores, and a row's unit is the same XOR for all of a
//     thread's rows (rows (threads / 8) apart share x % 8).
//   Tiles: WgmmaTile<W>, W warpgroups of 128 threads, each m64n128: W = 2
//     is 128 x 128 of the product (two blocks per SM at 97 KB), W = 1 is
//     64 x 128 (three per SM at 73 KB), for products of at most 64 rows
//     and those whose 128 x 128 tiles would leave SMs idle
//     (conv2d_implicit_gemm_wgmma_tile_rows). Three stages of 32 k; per stage,
//     GEMM v6's order: wait for this thread's copies, fence.proxy.async (the
//     copies are generic-proxy writes, wgmma reads through the async proxy),
//     wait for this warpgroup's wgmma of the previous stage, barrier, copy
//     stage t + 2 into the slot just freed, issue stage t's four wgmma.
//   Outputs: the accumulators (mma.sync's C layout per 16 rows of a warp,
//     convkit/sim/wgmma.h) go through version 4's output tile in shared
//     memory and the problem's store (pipelined::store_tile).
//   Scope: tf32. bf16 wgmma would need bf16 stages (the copies hold
//     float32; cp.async cannot convert), so in bf16 version 5 runs version
//     4's kernels. Backward-weights has its own kernel below
//     (implicit_gemm_tc_v5_wgmma_weights): its operands are x-contiguous.
//   Accumulation: per column, k in version 4's (r, s, c) order in slices of
//     8, so under sim version 5 gives version 4's tf32 bits.
// Written and tested on sim; no GPU has run it yet, and it is never the
// default until one has (CONVKIT_KERNEL_CONV2D_IMPLICIT_GEMM_TENSOR_CORE=5).
namespace wgmma_stages {
inline constexpr int kDepth = 32;  // floats of k per stage: one 128-byte row
inline constexpr int kStages = 3;
inline constexpr int kRowBytes = kDepth * 4;
inline constexpr int kUnits = kDepth / kVec;  // 16-byte units per row: 8
inline constexpr int kAccumulators = 64;       // m64n128 over a warpgroup's 128 threads
static_assert(kDepth == 32, "a stage is dev::wgmma_tf32_stage's 32 k");
}  // namespace wgmma_stages

template <int Warpgroups>
struct WgmmaTile {
  static_assert(Warpgroups == 1 || Warpgroups == 2, "one or two warpgroups");
  struct BlockTile {
    static constexpr int kM = 64 * Warpgroups, kN = 128;
  };
  static constexpr int kThreads = 128 * Warpgroups;
  static constexpr int kRowsPerPass = kThreads / wgmma_stages::kUnits;
  static constexpr int kACopies = BlockTile::kM / kRowsPerPass, kBCopies = BlockTile::kN / kRowsPerPass;
  static constexpr int kABytes = BlockTile::kM * wgmma_stages::kRowBytes;
  static constexpr int kStageBytes = (BlockTile::kM + BlockTile::kN) * wgmma_stages::kRowBytes;
  static constexpr std::size_t kSharedBytes = wgmma_stages::kStages * kStageBytes + 1024;  // + wgmma_aligned's skip
  // pipelined::store_tile's output tile (rows of kN + 8) reuses the stages.
  static_assert(BlockTile::kM * (BlockTile::kN + 8) * 4 <= wgmma_stages::kStages * kStageBytes, "output tile fits");
};

// How pipelined::store_tile sees version 5's accumulators: warp w holds
// rows 64 (w / 4) + 16 (w % 4) of the tile, all 128 columns, as 16 mma.sync
// C fragments (rows group and group + 8, columns 2 tig and 2 tig + 1 of
// each 8), staged as MmaMath stages its own (rows 8 banks apart).
struct WgmmaOutputs {
  static constexpr int kTileK = wgmma_stages::kDepth, kPad = 0, kOutPad = 8;
  using Acc = float[wgmma_stages::kAccumulators];
  template <int Pitch>
  __device__ __forceinline__ void stage_outputs(float* tile, const Acc& acc) const {
    static_assert(Pitch % 32 == 8, "rows 8 banks apart");
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int row = warp / 4 * 64 + warp % 4 * 16;
    CK_UNROLL
    for (int j = 0; j < 128 / 8; ++j)
      CK_UNROLL
      for (int h = 0; h < 2; ++h)
        dev::store8(tile + (row + dev::mma_c_row(lane, 2 * h)) * Pitch + j * 8 + dev::mma_c_col(lane, 0),
                    acc + 4 * j + 2 * h);
  }
};

// Forward and backward-data: blockIdx.x = m tile * n_tiles + column tile,
// blockIdx.y = group. k = (r*S + s)*Cg4 + c, as version 4's.
template <class Tile, class Problem>
__global__ void __launch_bounds__(Tile::kThreads, 2) implicit_gemm_tc_v5_wgmma(Problem pb, Operands op, int n_tiles) {
  using namespace wgmma_stages;
  constexpr int BM = Tile::BlockTile::kM, BN = Tile::BlockTile::kN;
  CK_DYNAMIC_SHARED(unsigned char, raw);
  unsigned char* const smem = dev::wgmma_aligned(raw);
  const std::uint32_t smem_address = dev::shared_address(smem);
  const PatchShape& ps = op.ps;
  const int tid = static_cast<int>(threadIdx.x), grp = static_cast<int>(blockIdx.y);
  const int warpgroup = tid / 128;
  const int m0 = static_cast<int>(blockIdx.x) / n_tiles * BM, n0 = static_cast<int>(blockIdx.x) % n_tiles * BN;
  // Warpgroup-uniform: whether this warpgroup's 64 rows meet the product.
  const bool live = m0 + warpgroup * 64 < pb.M;

  // This thread's unit of each row it copies, and where the unit lands.
  const int unit = tid % kUnits, first_row = tid / kUnits;
  const int landing = ((unit ^ (first_row % 8)) * 16);
  // A: filter rows, offsets of this thread's unit (-1: past the product).
  int a_at[Tile::kACopies];
  CK_UNROLL
  for (int i = 0; i < Tile::kACopies; ++i) {
    const int m = m0 + first_row + i * Tile::kRowsPerPass;
    a_at[i] = m < pb.M ? (grp * pb.M + m) * op.a_ld + unit * kVec : -1;
  }
  // B: a column's pixel, decoded once (version 4's).
  constexpr int kNeverInside = -(1 << 30);
  int b_at[Tile::kBCopies], bh[Tile::kBCopies], bw[Tile::kBCopies];
  CK_UNROLL
  for (int i = 0; i < Tile::kBCopies; ++i) {
    const int col = n0 + first_row + i * Tile::kRowsPerPass;
    const Digits pos = pipelined::to_digits(col < pb.cols ? col : 0, ps.P, ps.Q);
    b_at[i] = pos.hi * ps.H * ps.W * ps.C + grp * ps.Cg;
    bh[i] = col < pb.cols ? pos.mid * ps.ah + ps.oh : kNeverInside;
    bw[i] = pos.lo * ps.aw + ps.ow;
  }
  const int S = ps.S > 0 ? ps.S : 1;
  Digits tap = pipelined::to_digits(unit * kVec, S, ps.Cg);
  const Digits tap_step = pipelined::to_digits(kDepth, S, ps.Cg);
  int k0 = 0;  // the first k of the stage being copied
  auto copy_stage = [&](unsigned char* stage) {
    const bool k_ok = k0 + unit * kVec < pb.depth;
    CK_UNROLL
    for (int i = 0; i < Tile::kACopies; ++i) {
      const bool copy = k_ok && a_at[i] >= 0;
      dev::cp_async<16>(stage + (first_row + i * Tile::kRowsPerPass) * kRowBytes + landing,
                        copy ? op.a + a_at[i] + k0 : op.a, copy ? 16 : 0);
    }
    unsigned char* const b_stage = stage + Tile::kABytes;
    const int tr = tap.hi * ps.th, ts = tap.mid * ps.tw;
    CK_UNROLL
    for (int i = 0; i < Tile::kBCopies; ++i) {
      const int h = bh[i] + tr, w = bw[i] + ts;
      const bool copy = k_ok && static_cast<unsigned>(h) < static_cast<unsigned>(ps.H) &&
                        static_cast<unsigned>(w) < static_cast<unsigned>(ps.W);
      dev::cp_async<16>(b_stage + (first_row + i * Tile::kRowsPerPass) * kRowBytes + landing,
                        copy ? op.img + b_at[i] + (h * ps.W + w) * ps.C + tap.lo : op.img, copy ? 16 : 0);
    }
    pipelined::add_digits(tap, tap_step, S, ps.Cg);
    k0 += kDepth;
  };

  const int stages = (pb.depth + kDepth - 1) / kDepth;
  CK_UNROLL
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < stages) copy_stage(smem + s * Tile::kStageBytes);
    dev::cp_async_commit();  // possibly empty: keeps the group count fixed
  }
  float acc[kAccumulators];
  CK_UNROLL
  for (int i = 0; i < kAccumulators; ++i) acc[i] = 0.0f;
  dev::wgmma_fence_operands<kAccumulators>(acc);
  for (int t = 0; t < stages; ++t) {
    const int slot = t % kStages;
    dev::cp_async_wait<kStages - 2>();  // this thread's copies of stage t have landed
    dev::fence_proxy_async();           // ... and are visible to wgmma's reads
    dev::wgmma_wait<0>();               // this warpgroup is done with stage t - 1
    __syncthreads();                    // stage t is whole, stage t - 1 free everywhere
    if (t + kStages - 1 < stages) copy_stage(smem + (t + kStages - 1) % kStages * Tile::kStageBytes);
    dev::cp_async_commit();
    if (live) {
      const std::uint32_t stage = smem_address + static_cast<std::uint32_t>(slot * Tile::kStageBytes);
      dev::wgmma_tf32_stage(acc, stage + static_cast<std::uint32_t>(warpgroup * 64 * kRowBytes),
                            stage + static_cast<std::uint32_t>(Tile::kABytes));
    }
  }
  dev::wgmma_wait<0>();
  dev::wgmma_fence_operands<kAccumulators>(acc);
  dev::cp_async_wait<0>();  // only empty groups are left
  pipelined::store_tile<float, Tile>(pb, grp, m0, n0, 0, WgmmaOutputs{}, acc, reinterpret_cast<float*>(smem));
}

// Backward-weights on the copies: dw[grp*Kg + m][c][r][s] (or one split-K
// slice's partial of it) is row m of the product, column (r, s, c) in the
// copies' taps-major order; columns of the padding (c >= Cg) are sums of
// zeros and are not stored. A warp's stores run R*S elements apart: dw is
// the smallest tensor of the pass.
struct WeightsProblem {
  float* out;        // dw, or the split-K partials
  int slice_stride;  // elements between slices' partials (0: one slice, out is dw)
  int Kg, Cg, Cg4, RS;
  int M, cols, depth;  // Kg, R*S*Cg4, N*P*Q

  __device__ __forceinline__ void store(int grp, int m, int col, int slice, float acc) const {
    const int rs = col / Cg4, c = col - rs * Cg4;
    if (c < Cg) out[slice * slice_stride + ((grp * Kg + m) * Cg + c) * RS + rs] = acc;
  }
};

// MmaMath over stages Steps mma k-steps deep: one barrier, one wait and one
// round of copies per Steps k-steps (backward-weights in tf32, whose k-steps
// of 8 would otherwise pay them every 8 mma per warp).
template <TensorCorePrecision P, class Cfg, int Steps, bool Rounded>
struct DeepMmaMath : pipelined::MmaMath<P, Cfg, Rounded> {
  using Base = pipelined::MmaMath<P, Cfg, Rounded>;
  using typename Base::Acc;
  static constexpr int kTileK = Steps * kMmaStepK<P>;

  template <int RowA, int RowB>
  __device__ __forceinline__ void multiply(const float* as, const float* bs, Acc& acc) const {
    CK_UNROLL
    for (int step = 0; step < Steps; ++step)
      Base::template multiply<RowA, RowB>(as + step * kMmaStepK<P> * RowA, bs + step * kMmaStepK<P> * RowB, acc);
  }
};

// Backward-weights' Math: stages of 16 k in both precisions (two tf32
// k-steps, one bf16), read as the copies rounded them.
template <TensorCorePrecision P, class Cfg>
using WeightsMath = DeepMmaMath<P, Cfg, kStageK / kMmaStepK<P>, true>;

// x channels-last (img[n][h][w][grp][c4], ps its patch with ps.C = groups *
// Cg4 and ps.Cg = Cg4) and dy channels-last (dy[j][grp][m4], j = n*P*Q +
// p*Q + q, rows of dy_ld = groups * Kg4 elements).
struct WeightsOperands {
  PatchShape ps;
  const float* img;
  const float* dy;
  int Kg4, dy_ld;
};

// blockIdx.x = m tile * n_tiles + column tile, blockIdx.y = group,
// blockIdx.z = split-K slice of slice_len positions. Math: WeightsMath
// (k-major stages; the copies rounded tf32).
template <class Cfg, class Math>
__global__ void __launch_bounds__(kThreads, Cfg::kMinBlocks)
    implicit_gemm_tc_v4_channels_last_weights(WeightsProblem pb, WeightsOperands op, int n_tiles, int slice_len) {
  constexpr int BM = Cfg::BlockTile::kM, BN = Cfg::BlockTile::kN, kTileK = Math::kTileK;
  using Arrays = pipelined::StageArrays<float, Cfg, Math>;
  __shared__ __align__(16) SharedArray<float[Arrays::kShared]> smem;
  float* const a_stages = smem;
  float* const b_stages = a_stages + Arrays::kA;
  const PatchShape& ps = op.ps;
  const int tid = threadIdx.x, grp = blockIdx.y;
  const int m0 = static_cast<int>(blockIdx.x) / n_tiles * BM, n0 = static_cast<int>(blockIdx.x) % n_tiles * BN;
  const int k_begin = static_cast<int>(blockIdx.z) * slice_len;
  const int k_end = pb.depth < k_begin + slice_len ? pb.depth : k_begin + slice_len;
  const Math math;
  const bool live = math.live(m0, n0, pb.M, pb.cols);

  // A stage row (one position) holds BX / 4 vectors of each operand: thread
  // tid copies vector tid % (BX / 4) of rows tid / (BX / 4) + i * kRowStep,
  // so that 8 lanes store one 128-byte run of a row (no bank conflict).
  constexpr int kAVecs = BM / kVec, kBVecs = BN / kVec;
  constexpr int kARowStep = kThreads / kAVecs, kBRowStep = kThreads / kBVecs;
  constexpr int kACopies = (kTileK + kARowStep - 1) / kARowStep, kBCopies = (kTileK + kBRowStep - 1) / kBRowStep;
  const int av = tid % kAVecs, arow = tid / kAVecs, bv = tid % kBVecs, brow = tid / kBVecs;
  // A: dy's channels m0 + 4av.. of the group (zeros past the copy's Kg4).
  const bool a_inside = m0 + av * kVec < op.Kg4;
  const float* a_at = op.dy + grp * op.Kg4 + m0 + av * kVec;
  // B: the column's tap and channel, fixed; each row's position (n, p, q)
  // steps by a stage.
  const int col = n0 + bv * kVec;
  const bool b_inside = col < pb.cols;
  const int S = ps.S > 0 ? ps.S : 1;
  const Digits tap = pipelined::to_digits(b_inside ? col : 0, S, ps.Cg);
  const int tr = tap.hi * ps.th + ps.oh, ts = tap.mid * ps.tw + ps.ow;
  const float* b_at = op.img + grp * ps.Cg + tap.lo;
  Digits pos[kBCopies];
  CK_UNROLL
  for (int i = 0; i < kBCopies; ++i) pos[i] = pipelined::to_digits(k_begin + brow + i * kBRowStep, ps.P, ps.Q);
  const Digits pos_step = pipelined::to_digits(kTileK, ps.P, ps.Q);

  int k0 = k_begin;
  auto copy_step = [&](int stage) {
    float* as = a_stages + stage * Arrays::kStageA;
    float* bs = b_stages + stage * Arrays::kStageB;
    CK_UNROLL
    for (int i = 0; i < kACopies; ++i) {
      const int row = arow + i * kARowStep, j = k0 + row;
      if (row >= kTileK) break;
      const bool copy = a_inside && j < k_end;
      dev::cp_async<16>(as + row * Arrays::kRowA + av * kVec, copy ? a_at + j * op.dy_ld : op.dy, copy ? 16 : 0);
    }
    CK_UNROLL
    for (int i = 0; i < kBCopies; ++i) {
      const int row = brow + i * kBRowStep, j = k0 + row;
      if (row >= kTileK) break;
      const int h = pos[i].mid * ps.ah + tr, w = pos[i].lo * ps.aw + ts;
      const bool copy = b_inside && j < k_end && static_cast<unsigned>(h) < static_cast<unsigned>(ps.H) &&
                        static_cast<unsigned>(w) < static_cast<unsigned>(ps.W);
      dev::cp_async<16>(bs + row * Arrays::kRowB + bv * kVec,
                        copy ? b_at + ((pos[i].hi * ps.H + h) * ps.W + w) * ps.C : op.img, copy ? 16 : 0);
      pipelined::add_digits(pos[i], pos_step, ps.P, ps.Q);
    }
    k0 += kTileK;
  };
  typename Math::Acc acc = {};
  const int k_steps = k_end > k_begin ? (k_end - k_begin + kTileK - 1) / kTileK : 0;
  pipelined::run_pipeline<float, Cfg>(k_steps, a_stages, b_stages, math, live, copy_step, acc);
  pipelined::store_tile<float, Cfg>(pb, grp, m0, n0, static_cast<int>(blockIdx.z), math, acc, a_stages);
}

// Version 5's backward-weights: version 4's channels-last x and dy copies
// (rounded to tf32 as they are made), multiplied by wgmma. Its operands are
// both x-contiguous (a 16-byte vector is 4 dy channels, or 4 x channels of
// one tap, at one position) and tf32 wgmma reads K-major (position-major)
// stages only, so the stages go through registers, as GEMM v7's do: each
// thread loads a 4 x 4 block of each operand (4 vectors at 4 consecutive
// positions), and stores it transposed into a 128-byte swizzled
// stage of 32 positions (kernels/warpgroup_stage.cuh: the rotated order
// that keeps the stores conflict-free). Two stages in shared memory and one
// in registers, v7's pipeline: issue stage t's wgmma, wait for t - 1's,
// barrier, store t + 1 from the registers, load t + 2, barrier. 128 x 128
// tiles of two warpgroups (a warpgroup whose rows are past the product
// issues nothing); version 4's split-K slices (blockIdx.z) and store.
// Positions run in order, in slices of 8: under sim the sums are version
// 4's, bit for bit.
inline constexpr int kWeightsSlots = 2;
using WeightsTile = WgmmaTile<2>;
// The output tile (pipelined::store_tile's rows of kN + 8) is larger than
// the two stages; + wgmma_aligned's skip.
inline constexpr std::size_t kWeightsSharedBytes =
    std::max(kWeightsSlots * WeightsTile::kStageBytes,
             WeightsTile::BlockTile::kM * (WeightsTile::BlockTile::kN + 8) * 4) + 1024;

__global__ void __launch_bounds__(WeightsTile::kThreads, 1)
    implicit_gemm_tc_v5_wgmma_weights(WeightsProblem pb, WeightsOperands op, int n_tiles, int slice_len) {
  using namespace wgmma_stages;
  constexpr TensorCorePrecision kTf32 = TensorCorePrecision::tf32;
  constexpr int BM = WeightsTile::BlockTile::kM, BN = WeightsTile::BlockTile::kN;
  static_assert(BM == 128 && BN == 128 && WeightsTile::kThreads == 256, "warpgroup_stage's 4 x 4 blocks");
  CK_DYNAMIC_SHARED(unsigned char, raw);
  unsigned char* const smem = dev::wgmma_aligned(raw);
  const std::uint32_t smem_address = dev::shared_address(smem);
  const PatchShape& ps = op.ps;
  const int tid = static_cast<int>(threadIdx.x), grp = static_cast<int>(blockIdx.y), warpgroup = tid / 128;
  const int m0 = static_cast<int>(blockIdx.x) / n_tiles * BM, n0 = static_cast<int>(blockIdx.x) % n_tiles * BN;
  const int k_begin = static_cast<int>(blockIdx.z) * slice_len;
  const int k_end = pb.depth < k_begin + slice_len ? pb.depth : k_begin + slice_len;
  const bool live = m0 + warpgroup * 64 < pb.M;
  const auto slot = [&](int t) { return smem + t % kWeightsSlots * WeightsTile::kStageBytes; };

  // This thread's blocks: rows (A: dy channels, B: columns) x0..x0+3 at
  // positions j..j+3 of each stage. A column block is one tap's 4 channels.
  const int x0 = 4 * warpgroup_stage::block_x();
  const bool a_inside = m0 + x0 < op.Kg4;
  const float* const a_at = op.dy + grp * op.Kg4 + m0 + x0;
  const int col = n0 + x0;
  const bool b_inside = col < pb.cols;
  const int S = ps.S > 0 ? ps.S : 1;
  const Digits tap = pipelined::to_digits(b_inside ? col : 0, S, ps.Cg);
  const int tr = tap.hi * ps.th + ps.oh, ts = tap.mid * ps.tw + ps.ow;
  const float* const b_at = op.img + grp * ps.Cg + tap.lo;
  int j = k_begin + 4 * warpgroup_stage::block_k();
  Digits pos = pipelined::to_digits(j, ps.P, ps.Q);
  const Digits pos_step = pipelined::to_digits(kDepth, ps.P, ps.Q), next = pipelined::to_digits(1, ps.P, ps.Q);
  float av[4][4], bv[4][4];
  const auto load = [&]() {
    Digits at = pos;
    CK_UNROLL
    for (int kk = 0; kk < 4; ++kk) {
      const bool in_slice = j + kk < k_end;
      const bool a_copy = a_inside && in_slice;
      warpgroup_stage::load4<true>(a_copy ? a_at + (j + kk) * op.dy_ld : op.dy, a_copy ? 4 : 0, av[kk]);
      const int h = at.mid * ps.ah + tr, w = at.lo * ps.aw + ts;
      const bool b_copy = b_inside && in_slice && static_cast<unsigned>(h) < static_cast<unsigned>(ps.H) &&
                          static_cast<unsigned>(w) < static_cast<unsigned>(ps.W);
      warpgroup_stage::load4<true>(b_copy ? b_at + ((at.hi * ps.H + h) * ps.W + w) * ps.C : op.img,
                                   b_copy ? 4 : 0, bv[kk]);
      pipelined::add_digits(at, next, ps.P, ps.Q);
    }
    pipelined::add_digits(pos, pos_step, ps.P, ps.Q);
    j += kDepth;
  };
  const auto store = [&](unsigned char* stage) {
    warpgroup_stage::store_block_transposed<kTf32, true>(stage, av);
    warpgroup_stage::store_block_transposed<kTf32, true>(stage + WeightsTile::kABytes, bv);
  };

  const int stages = k_end > k_begin ? (k_end - k_begin + kDepth - 1) / kDepth : 0;
  float acc[kAccumulators];
  CK_UNROLL
  for (int i = 0; i < kAccumulators; ++i) acc[i] = 0.0f;
  dev::wgmma_fence_operands<kAccumulators>(acc);
  for (int t = 0; t < 2 && t < stages; ++t) {
    load();
    if (t == 0) store(slot(0));
  }
  dev::fence_proxy_async();
  __syncthreads();
  for (int t = 0; t < stages; ++t) {
    if (live) {
      const std::uint32_t stage = smem_address + static_cast<std::uint32_t>(slot(t) - smem);
      dev::wgmma_tf32_stage(acc, stage + static_cast<std::uint32_t>(warpgroup * 64 * kRowBytes),
                            stage + static_cast<std::uint32_t>(WeightsTile::kABytes));
    }
    dev::wgmma_wait<1>();  // this warpgroup's wgmma of t - 1 are done
    __syncthreads();       // ... and every warpgroup's: the other slot is free
    if (t + 1 < stages) {
      store(slot(t + 1));
      dev::fence_proxy_async();
    }
    if (t + 2 < stages) load();
    __syncthreads();  // stage t + 1 is whole
  }
  dev::wgmma_wait<0>();
  dev::wgmma_fence_operands<kAccumulators>(acc);
  pipelined::store_tile<float, WeightsTile>(pb, grp, m0, n0, static_cast<int>(blockIdx.z), WgmmaOutputs{}, acc,
                                            reinterpret_cast<float*>(smem));
}

}  // namespace convkit::CK_GPU_NS::channels_last
