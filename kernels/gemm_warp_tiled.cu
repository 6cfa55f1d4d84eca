// GEMM versions 4 to 8 (the contract is kernels/gemm.cuh's): the SIMT FP32
// GEMM of the classic SGEMM progression after v3's register blocking. One
// kernel template, gemm_warp_tiled, names its three levels of tiling in its
// types (as CUTLASS does) and is instantiated five ways:
//
//   v4 warp tiling        128x128x8 block tile, synchronous loads
//   v5 cp.async pipeline  v4's tiles, loaded by cp.async into 3 stages
//   v6 per-shape tiles    v5 with the block tile chosen by the shape
//   v7 split-K            v6, K split over blocks when the tiles alone
//                          cannot fill the GPU, with a fixed-order reduction
//   v8 wide thread tiles  v7 with its 128x128 tile in 4 warps of 64x64,
//                          8x16 accumulators per thread (float)
//
// The floor is v3's (gemm.cu): 2 M N K flops over at least M K + K N + M N
// elements. What each version adds:
//
// v4, warp tiling. Block tile -> warp tile -> thread tile:
//   GemmShape<128,128,8> / WarpShape<64,32> / ThreadShape<8,8>: 8 warps (2x4)
//   of 32 lanes (8x4), each lane 8x8 accumulators. Global intensity as v3
//   (128 flops per element loaded, 32 flop/B fp32). What it fixes over v3:
//   - Shared stores without bank conflicts. Both tiles are stored k-major
//     (S[k][x]) with rows of BX + 4 elements. An operand stored along x (A
//     transposed, B not) moves as 16-byte runs: a warp writes one 512-byte
//     row, the 4 wavefronts that 512 bytes need. An operand stored along k
//     moves element by element: a warp's 32 lanes take 8 k by 4 x, lane
//     (k, x) storing word k * (BX + 4) + x, and BX + 4 = 4 (mod 32) puts the
//     32 words in 32 banks. v3 moved such runs as 16-byte loads and stored
//     them transposed (4-way conflicts in the profile), and v2's +1 padding
//     conflicts on its untransposed stores.
//   - Shared loads that are one 16-byte load per 4 values, each request at
//     most 128 distinct bytes: a lane's 8 rows are 2 groups of 4 spaced by
//     8 lanes x 4, so the 8 lanes along m read 8 consecutive 16-byte chunks.
//   - 32-bit indices inside the tile and __launch_bounds__(256, 2): at most
//     128 registers, so two blocks (16 warps) fit on an SM where v3 (130-149
//     registers) fits one. ptxas gets there by spilling up to 136 bytes per
//     thread on the 128-row tiles (docs/gpu/gemm.md, resource use).
//   Global reads coalesce whatever the transposes: 16-byte runs along a
//   stored row, or 4 x 32-byte segments for the element-wise case (the
//   minimum sectors for 4-byte lanes).
//
// v5, cp.async pipeline. The copies become cp.async (kernels/async_copy.cuh)
//   into kStages = 3 shared buffers (2 for double, which would not fit 48 KB):
//   while the warps multiply stage s, the copies for stages s+1 and s+2 are
//   in flight, and no register holds data on its way to shared memory. One
//   barrier per k-tile: at the top of iteration t, wait_group(kStages - 2)
//   lands tile t, and the barrier both publishes it and proves every warp is
//   done with tile t - 1, whose buffer the copies of tile t + kStages - 1
//   then reuse. Ragged edges are zero-filled by the copy (src-size < 16).
//
// v6, per-shape tiles. Four configurations (describe: gemm_describe):
//     128x128x8, warps 2x4 of 64x32, threads 8x8, 256 threads
//     128x64x8,  warps 2x2 of 64x32, threads 8x8, 128 threads
//     64x64x8,   warps 2x2 of 32x32, threads 4x8, 128 threads
//     64x32x8,   warps 2x2 of 32x16, threads 4x4, 128 threads
//   Rule: the largest tile whose blocks (tiles x batch) number at least the
//   GPU's SMs (132 on an H100), else the smallest. A big tile re-reads
//   operands least; a small one keeps every SM busy on a small C and wastes
//   less on ragged edges (a 16-row C in a 128-row tile is 88% zeros).
//
// v7, split-K. When even v6's tile leaves SMs idle (blocks < 132) and K is
//   long (a dense layer: Linear(2304, 512) at batch 128 is M = 128, N = 512,
//   K = 2304, 32 blocks of 64x32), blockIdx.z cuts K into `splits` slices of
//   at least 256: splits = min(ceil(132 / blocks), K / 256, 64). Each block
//   writes its raw partial sums to a workspace slice; a second kernel adds
//   the slices in the fixed order 0, 1, ..., splits - 1 and applies alpha and
//   beta. No atomics, so the result is bit-identical from run to run. The
//   price: splits x M x N partials written and read back.
//
// v8, wide thread tiles. v7's rules and tiles, but its 128x128 tile (float)
//   is 4 warps of 64x64 (2x2), each lane 8x16 accumulators: 128 threads,
//   `__launch_bounds__(128, 2)`. Why: nvcc's loop for v5-v7's 8x8 lanes
//   (sm_90a, A and B untransposed) is 659 instructions per k-tile for 512
//   FFMA, 78% of the issue slots, and a Hopper SM issues one instruction per
//   sub-partition per clock, so the loop cannot pass 78% of the FP32 peak;
//   the copies' address and bounds arithmetic and the fragment loads are a
//   fixed cost per k-tile per thread, which 8x16 lanes spread over twice
//   the FFMA: 1,259 instructions for 1,024 (81%; 84% with B transposed).
//   Per k, a lane reads 24 values for 128 FFMA (16 for 64), and a warp's
//   fragment reads are 512 distinct bytes of shared memory for 4,096 FMA
//   (384 for 2,048): 3/4 of the fragment loads per FMA, 2/3 of the distinct
//   bytes (the sim profile counts 0.75x the wavefronts). The price: 255
//   registers (ptxas spills 24 bytes in some transposes, outside the loop)
//   and 8 warps per SM where v7's tile runs 16, so each warp's own
//   independent FFMA have to hide the loads' latency. cuBLAS's FP32 kernels
//   on Hopper take the same trade (64x64 warp tiles); a GPU decides whether
//   it pays here, and v7 stays the default until one has. Double's 8x16
//   accumulators would not fit the registers: v8 runs v7 there.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "gpu/device_memory.h"
#include "kernels/async_copy.cuh"
#include "kernels/device_math.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/gemm_warp_tiled.cuh"
#include "kernels/tensor_view.cuh"
#include "kernels/vector_access.cuh"
#include "kernels/warp_tile.cuh"

namespace convkit::CK_GPU_NS {

namespace {

using namespace warp_tile;  // GemmShape, WarpShape, ThreadShape, TileConfig, multiply_stage

using Config128x128 = TileConfig<GemmShape<128, 128, 8>, WarpShape<64, 32>, ThreadShape<8, 8>, 2>;
using Config128x64 = TileConfig<GemmShape<128, 64, 8>, WarpShape<64, 32>, ThreadShape<8, 8>, 4>;
using Config64x64 = TileConfig<GemmShape<64, 64, 8>, WarpShape<32, 32>, ThreadShape<4, 8>, 4>;
using Config64x32 = TileConfig<GemmShape<64, 32, 8>, WarpShape<32, 16>, ThreadShape<4, 4>, 4>;
using Config128x128Wide = TileConfig<GemmShape<128, 128, 8>, WarpShape<64, 64>, ThreadShape<8, 16>, 2>;

enum class TileChoice { c128x128, c128x64, c64x64, c64x32 };
constexpr TileChoice kTileChoices[] = {TileChoice::c128x128, TileChoice::c128x64, TileChoice::c64x64,
                                       TileChoice::c64x32};

constexpr int kMinSplitK = 256;       // the shortest K slice worth a block
constexpr int kMaxSplits = 64;
constexpr int kFloatStages = 3;       // v5-v7 pipeline depth (float)
constexpr int kDoubleStages = 2;      // double: 3 stages of 128x128 would pass 48 KB

template <typename T>
constexpr int kStagesOf = sizeof(T) == 8 ? kDoubleStages : kFloatStages;

template <typename T>
struct Params {
  const T* a;
  const T* b;
  T* c;  // C, or the split-K workspace
  int M, N, K;
  std::int64_t batch;
  std::int64_t lda, ldb, ldc;
  std::int64_t stride_a, stride_b, stride_c;
  std::int64_t split_stride;  // elements between the slices of the workspace
  int k_per_split;            // a multiple of the tile's K
  int n_tiles;
  T alpha, beta;
  bool vec_ab;  // 16-byte copies of A and B allowed (aligned pointers, lds, strides)
  bool vec_c;   // 16-byte accesses to C allowed
};

// One operand's share of a stage, per thread. The tile is op(X) for
// x in [x0, x0 + BX) and k in [k0, k0 + BK), stored S[k][x] with rows of
// BX + pad. Along its stored contiguous dimension the operand moves in runs:
// XContig (element (x, k) at p[k * ld + x]) runs of V along x, one 16-byte
// copy each; otherwise (at p[x * ld + k]) single elements along k.
template <typename T, bool XContig, int BX, int BK, int Threads>
struct StageCopy {
  static constexpr int V = dev::kVec16<T>;
  static constexpr int kRun = XContig ? V : 1;
  static constexpr int kRunsPerLine = (XContig ? BX : BK) / kRun;
  static constexpr int kLines = XContig ? BK : BX;
  static constexpr int kLineStep = Threads / kRunsPerLine;
  static constexpr int kIters = (kLines + kLineStep - 1) / kLineStep;
  static_assert(Threads % kRunsPerLine == 0, "each thread keeps one position along the line");

  const T* p;    // the thread's first run of the current k-tile
  int line, pos;  // its line and position in the tile
  int line_g, pos_g;  // the same in op(X) coordinates (x or k)

  __device__ __forceinline__ StageCopy(const T* base, std::int64_t ld, int x0, int k0) {
    line = static_cast<int>(threadIdx.x) / kRunsPerLine;
    pos = static_cast<int>(threadIdx.x) % kRunsPerLine * kRun;
    line_g = (XContig ? k0 : x0) + line;
    pos_g = (XContig ? x0 : k0) + pos;
    p = base + static_cast<std::int64_t>(line_g) * ld + pos_g;
  }

  // Copies this thread's runs of the tile into S (a stage's [BK][BX + pad]);
  // elements at x >= x_limit or k >= k_limit become zeros.
  template <bool Async>
  __device__ __forceinline__ void copy(std::int64_t ld, int x_limit, int k_limit, bool vec, T* S) const {
    const int line_limit = XContig ? k_limit : x_limit;
    const int pos_limit = XContig ? x_limit : k_limit;
    constexpr int kRow = BX + dev::kVec16<T>;
    CK_UNROLL
    for (int i = 0; i < kIters; ++i) {
      const int l = line + i * kLineStep;
      if (kLines % kLineStep != 0 && l >= kLines) break;
      const bool line_ok = line_g + i * kLineStep < line_limit;
      const int valid = line_ok ? max(0, min(kRun, pos_limit - pos_g)) : 0;
      const T* src = p + static_cast<std::int64_t>(i) * kLineStep * ld;
      T* dst = XContig ? S + l * kRow + pos : S + pos * kRow + l;
      if (XContig && vec) {
        // src-size < 16 zero-fills a ragged run; with nothing valid the
        // source is not read, so any address will do.
        const T* from = valid > 0 ? src : p;
        if constexpr (Async) dev::cp_async_cg(dst, from, valid * static_cast<int>(sizeof(T)));
        else dev::async_detail::copy_now<16>(dst, from, valid * static_cast<int>(sizeof(T)));
      } else {
        CK_UNROLL
        for (int j = 0; j < kRun; ++j) {
          const bool ok = j < valid;
          const T* from = ok ? src + j : p;
          const int bytes = ok ? static_cast<int>(sizeof(T)) : 0;
          if constexpr (Async) dev::cp_async<sizeof(T)>(dst + j, from, bytes);
          else dev::async_detail::copy_now<sizeof(T)>(dst + j, from, bytes);
        }
      }
    }
  }

  __device__ __forceinline__ void next(std::int64_t ld, int bk) {
    p += XContig ? bk * ld : bk;
    (XContig ? line_g : pos_g) += bk;
  }
};

// Double's 8x8 accumulators alone fill 128 registers: it asks for one block
// per SM, not two, rather than spill kilobytes.
template <typename T, class Cfg>
[[maybe_unused]] constexpr int kMinBlocksOf = sizeof(T) == 8 ? 1 : Cfg::kMinBlocks;

template <typename T, bool TA, bool TB, class Cfg, bool Async>
__global__ void __launch_bounds__(Cfg::kThreads, (kMinBlocksOf<T, Cfg>)) gemm_warp_tiled(Params<T> p) {
  using Block = typename Cfg::BlockTile;
  using Thread = typename Cfg::ThreadTile;
  constexpr int BM = Block::kM, BN = Block::kN, BK = Block::kK;
  constexpr int V = dev::kVec16<T>;
  constexpr int kStages = Async ? kStagesOf<T> : 1;
  constexpr int kRowA = BM + V, kRowB = BN + V;  // + 16 bytes: see the head comment
  constexpr int TM = Thread::kM, TN = Thread::kN;
  __shared__ __align__(16) SharedArray<T[kStages][BK * kRowA]> As;
  __shared__ __align__(16) SharedArray<T[kStages][BK * kRowB]> Bs;

  // The first row and column of the thread's fragments within the block tile.
  const ThreadOrigin<T, Cfg> o;
  const int tm0 = o.tm0, tn0 = o.tn0;
  const int m0 = static_cast<int>(blockIdx.x) / p.n_tiles * BM;
  const int n0 = static_cast<int>(blockIdx.x) % p.n_tiles * BN;
  const int k_begin = static_cast<int>(blockIdx.z) * p.k_per_split;
  const int k_end = min(p.K, k_begin + p.k_per_split);
  const int k_tiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
  // As v3: a thread whose first row or column is outside C has all of them
  // outside; it copies and meets the barriers but skips the arithmetic.
  const bool live = m0 + tm0 < p.M && n0 + tn0 < p.N;

  for (std::int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
    StageCopy<T, TA, BM, BK, Cfg::kThreads> a_copy(p.a + b * p.stride_a, p.lda, m0, k_begin);
    StageCopy<T, !TB, BN, BK, Cfg::kThreads> b_copy(p.b + b * p.stride_b, p.ldb, n0, k_begin);
    T acc[TM][TN] = {};

    auto compute = [&](int stage) {
      if (live) multiply_stage<T, Cfg, kRowA, kRowB>(As[stage], Bs[stage], o, acc);
    };
    auto copy_stage = [&](int stage) {
      a_copy.template copy<Async>(p.lda, p.M, k_end, p.vec_ab, As[stage]);
      b_copy.template copy<Async>(p.ldb, p.N, k_end, p.vec_ab, Bs[stage]);
      a_copy.next(p.lda, BK);
      b_copy.next(p.ldb, BK);
    };

    if constexpr (!Async) {
      for (int t = 0; t < k_tiles; ++t) {
        copy_stage(0);
        __syncthreads();
        compute(0);
        __syncthreads();  // before the next k-tile overwrites the stage
      }
    } else {
      CK_UNROLL
      for (int s = 0; s < kStages - 1; ++s) {
        if (s < k_tiles) copy_stage(s);
        dev::cp_async_commit();  // possibly empty: keeps the group count fixed
      }
      for (int t = 0; t < k_tiles; ++t) {
        dev::cp_async_wait<kStages - 2>();  // tile t has landed (for this thread)
        __syncthreads();                    // ... for all, and tile t - 1 is consumed
        const int next = t + kStages - 1;
        if (next < k_tiles) copy_stage(next % kStages);
        dev::cp_async_commit();
        compute(t % kStages);
      }
      dev::cp_async_wait<0>();  // only empty groups are left
      __syncthreads();          // the next batch's copies reuse the stages
    }

    if (!live) continue;
    T* c = p.c + blockIdx.z * p.split_stride + b * p.stride_c;
    CK_UNROLL
    for (int i = 0; i < TM; ++i) {
      const int m = m0 + o.row(i);
      if (m >= p.M) continue;
      CK_UNROLL
      for (int g = 0; g < TN / V; ++g) {
        const int n = n0 + tn0 + g * Cfg::kLanesN * V;
        T* cp = c + static_cast<std::int64_t>(m) * p.ldc + n;
        T out[V];
        CK_UNROLL
        for (int j = 0; j < V; ++j) out[j] = p.alpha * acc[i][g * V + j];
        if (p.vec_c && n + V <= p.N) {
          if (p.beta != T(0)) {
            T old[V];
            dev::load16(cp, old);
            CK_UNROLL
            for (int j = 0; j < V; ++j) out[j] += p.beta * old[j];
          }
          dev::store16(cp, out);
        } else {
          CK_UNROLL
          for (int j = 0; j < V; ++j)
            if (n + j < p.N) cp[j] = p.beta == T(0) ? out[j] : out[j] + p.beta * cp[j];
        }
      }
    }
  }
}

// The second pass of split-K: C = alpha * (W[0] + W[1] + ... + W[splits-1])
// + beta * C, element by element, always in that order.
template <typename T>
__global__ void __launch_bounds__(256) gemm_splitk_reduce(const T* w, int splits, std::int64_t split_stride,
                                                         int ldw, T* c, std::int64_t ldc, std::int64_t stride_c,
                                                         int M, int N, std::int64_t batch, T alpha, T beta) {
  const std::int64_t total = batch * M * N;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t b = e / (static_cast<std::int64_t>(M) * N);
    const int m = static_cast<int>(e / N % M), n = static_cast<int>(e % N);
    const T* src = w + (b * M + m) * ldw + n;
    T sum = 0;
    for (int s = 0; s < splits; ++s) sum += src[s * split_stride];
    T* dst = c + b * stride_c + m * ldc + n;
    *dst = beta == T(0) ? alpha * sum : alpha * sum + beta * *dst;
  }
}

struct Plan {
  TileChoice tile = TileChoice::c128x128;
  bool async = false;
  bool wide_threads = false;  // v8 asks for Config128x128Wide (runs_wide_threads says where it runs)
  int splits = 1;
  int k_per_split = 0;
};

struct TileDims {
  int m, n, k, threads;
};

constexpr TileDims dims_of(TileChoice t) {
  switch (t) {
    case TileChoice::c128x128: return {128, 128, 8, Config128x128::kThreads};
    case TileChoice::c128x64: return {128, 64, 8, Config128x64::kThreads};
    case TileChoice::c64x64: return {64, 64, 8, Config64x64::kThreads};
    case TileChoice::c64x32: return {64, 32, 8, Config64x32::kThreads};
  }
  return {128, 128, 8, 256};
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
constexpr std::int64_t kMaxGridY = 65535;

std::int64_t blocks_of(TileChoice t, const GemmArgs& g) {
  const TileDims d = dims_of(t);
  return ceil_div(g.M, d.m) * ceil_div(g.N, d.n) * std::min(g.batch, kMaxGridY);
}

Plan plan_of(const GemmArgs& g, int version) {
  Plan plan;
  plan.async = version >= kGemmPipelinedVersion;
  plan.wide_threads = version >= kGemmWideThreadTileVersion;
  plan.k_per_split = static_cast<int>(std::max<std::int64_t>(g.K, 1));
  if (version < kGemmPerShapeVersion) return plan;
  plan.tile = TileChoice::c64x32;
  for (TileChoice t : kTileChoices) {
    if (blocks_of(t, g) >= kSmCount) {
      plan.tile = t;
      break;
    }
  }
  if (version < kGemmSplitKVersion) return plan;
  const std::int64_t blocks = blocks_of(plan.tile, g);
  if (blocks >= kSmCount) return plan;
  const std::int64_t splits =
      std::min<std::int64_t>({ceil_div(kSmCount, blocks), g.K / kMinSplitK, kMaxSplits});
  if (splits <= 1) return plan;
  const int bk = dims_of(plan.tile).k;
  plan.k_per_split = static_cast<int>(ceil_div(ceil_div(g.K, splits), bk) * bk);
  plan.splits = static_cast<int>(ceil_div(g.K, plan.k_per_split));
  return plan;
}

// v8's rule: its 128x128 tile takes 8x16 lanes for float; double keeps
// v7's (8x16 double accumulators alone would fill the 255 registers).
bool runs_wide_threads(const Plan& plan, DType dtype) {
  return plan.wide_threads && plan.tile == TileChoice::c128x128 && dtype == DType::float32;
}

const char* tile_text(TileChoice t, bool wide_threads) {
  if (t == TileChoice::c128x128 && wide_threads)
    return "128x128x8 block tile, warps 2x2 of 64x64, threads 8x16 (128 threads)";
  switch (t) {
    case TileChoice::c128x128: return "128x128x8 block tile, warps 2x4 of 64x32, threads 8x8 (256 threads)";
    case TileChoice::c128x64: return "128x64x8 block tile, warps 2x2 of 64x32, threads 8x8 (128 threads)";
    case TileChoice::c64x64: return "64x64x8 block tile, warps 2x2 of 32x32, threads 4x8 (128 threads)";
    case TileChoice::c64x32: return "64x32x8 block tile, warps 2x2 of 32x16, threads 4x4 (128 threads)";
  }
  return "?";
}

template <typename T, bool TA, bool TB, class Cfg>
void launch_config(const Params<T>& p, bool async, dim3 grid) {
  if (async) launch(gemm_warp_tiled<T, TA, TB, Cfg, true>, grid, dim3(Cfg::kThreads), 0, nullptr, p);
  else launch(gemm_warp_tiled<T, TA, TB, Cfg, false>, grid, dim3(Cfg::kThreads), 0, nullptr, p);
}

// `wide`: runs_wide_threads, true for float only, the one type the wide
// tile is compiled for.
template <typename T, bool TA, bool TB>
void launch_tiles(const Params<T>& p, const Plan& plan, bool wide, dim3 grid) {
  switch (plan.tile) {
    case TileChoice::c128x128:
      if constexpr (sizeof(T) == 4) {
        if (wide) {  // v8 >= v5: always the pipeline
          launch(gemm_warp_tiled<T, TA, TB, Config128x128Wide, true>, grid, dim3(Config128x128Wide::kThreads), 0,
                 nullptr, p);
          break;
        }
      }
      launch_config<T, TA, TB, Config128x128>(p, plan.async, grid);
      break;
    case TileChoice::c128x64: launch_config<T, TA, TB, Config128x64>(p, plan.async, grid); break;
    case TileChoice::c64x64: launch_config<T, TA, TB, Config64x64>(p, plan.async, grid); break;
    case TileChoice::c64x32: launch_config<T, TA, TB, Config64x32>(p, plan.async, grid); break;
  }
}

}  // namespace

std::string gemm_warp_tiled_cannot_implement(const GemmArgs& g, int version) {
  if (version < kGemmWarpTiledVersion || version > kGemmWideThreadTileVersion) return "not a warp-tiled version";
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  if (g.M > kIntMax || g.N > kIntMax || g.K > kIntMax)
    return detail::concat("v", version, " indexes within C and K in 32 bits: M, N and K must be below 2^31 (M=",
                          g.M, " N=", g.N, " K=", g.K, ")");
  const Plan plan = plan_of(g, version);
  const TileDims d = dims_of(plan.tile);
  if (ceil_div(g.M, d.m) * ceil_div(g.N, d.n) > kIntMax)
    return detail::concat("C of ", g.M, " x ", g.N, " has more ", d.m, "x", d.n, " tiles than a grid holds");
  return {};
}

std::string gemm_warp_tiled_describe(DType dtype, const GemmArgs& g, int version) {
  const Plan plan = plan_of(g, version);
  std::string s = detail::concat(tile_text(plan.tile, runs_wide_threads(plan, dtype)), ", ");
  if (plan.async) {
    s += detail::concat("cp.async pipeline of ", dtype == DType::float64 ? kDoubleStages : kFloatStages,
                        " stages");
  } else {
    s += "synchronous loads, 1 stage";
  }
  if (plan.splits > 1)
    s += detail::concat(", split-K ", plan.splits, " x ", plan.k_per_split, " with a fixed-order reduction");
  return s;
}

void launch_gemm_warp_tiled(DType dtype, const GemmArgs& g, int version) {
  const Plan plan = plan_of(g, version);
  const TileDims d = dims_of(plan.tile);
  const std::int64_t v = dtype == DType::float64 ? 2 : 4;
  const bool vec_ab = dev::aligned16(g.a) && dev::aligned16(g.b) && g.lda % v == 0 && g.ldb % v == 0 &&
                      g.stride_a % v == 0 && g.stride_b % v == 0;
  const bool vec_c = dev::aligned16(g.c) && g.ldc % v == 0 && g.stride_c % v == 0;
  const dim3 grid(static_cast<unsigned>(ceil_div(g.M, d.m) * ceil_div(g.N, d.n)),
                  static_cast<unsigned>(std::min(g.batch, kMaxGridY)), static_cast<unsigned>(plan.splits));
  dispatch_floating(dtype, "gemm", [&](auto t) {
    using T = decltype(t);
    Params<T> p{static_cast<const T*>(g.a), static_cast<const T*>(g.b), static_cast<T*>(g.c),
                static_cast<int>(g.M), static_cast<int>(g.N), static_cast<int>(g.K), g.batch, g.lda, g.ldb,
                g.ldc, g.stride_a, g.stride_b, g.stride_c, 0, plan.k_per_split,
                static_cast<int>(ceil_div(g.N, d.n)), static_cast<T>(g.alpha), static_cast<T>(g.beta), vec_ab,
                vec_c};
    // Split-K: the partial sums go to a workspace whose rows are padded to
    // whole 16-byte vectors, then gemm_splitk_reduce writes C.
    const int ldw = static_cast<int>(ceil_div(g.N, v) * v);
    const std::int64_t slice = g.batch * g.M * ldw;
    const std::size_t ws_bytes = plan.splits > 1 ? static_cast<std::size_t>(slice * plan.splits) * sizeof(T) : 0;
    T* ws = ws_bytes > 0 ? static_cast<T*>(device_allocate(ws_bytes)) : nullptr;
    if (ws != nullptr) {
      p.c = ws, p.ldc = ldw, p.stride_c = g.M * ldw, p.split_stride = slice;
      p.alpha = T(1), p.beta = T(0), p.vec_c = true;
    }
    try {
      with_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
        launch_tiles<T, decltype(ta)::value, decltype(tb)::value>(p, plan, runs_wide_threads(plan, dtype), grid);
      });
      if (ws != nullptr) {
        constexpr std::int64_t kReduceThreads = 256, kMaxReduceBlocks = 4 * 1024;
        const auto blocks = static_cast<unsigned>(
            std::min(ceil_div(g.batch * g.M * g.N, kReduceThreads), kMaxReduceBlocks));
        launch(gemm_splitk_reduce<T>, dim3(blocks), dim3(kReduceThreads), 0, nullptr, static_cast<const T*>(ws),
               plan.splits, slice, ldw, static_cast<T*>(g.c), g.ldc, g.stride_c, static_cast<int>(g.M),
               static_cast<int>(g.N), g.batch, static_cast<T>(g.alpha), static_cast<T>(g.beta));
      }
    } catch (...) {
      if (ws != nullptr) device_free(ws, ws_bytes);
      throw;
    }
    if (ws != nullptr) device_free(ws, ws_bytes);
  });
}

}  // namespace convkit::CK_GPU_NS
