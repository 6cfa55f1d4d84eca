// Tensor-core GEMM: C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b] on
// float32 (gemm.cuh's layout contract), with op(A) and op(B) rounded to tf32
// (cvt.rna: 10 mantissa bits) or bf16 (round to nearest even: 7 bits) and
// multiplied by mma.sync, accumulating in float32 (kernels/tensor_core.cuh,
// convkit/sim/mma.h for the fragment layouts).
//
// Accuracy. Each product of two rounded operands carries a relative error of
// at most 2u (u = 2^-11 for tf32, 2^-8 for bf16); summed over K terms of mixed
// sign the error grows like u * sqrt(K) * sqrt(sum of squared products) in
// practice, K * u * sum |a||b| at worst. Tests hold the kernels to the worst
// case bound against a float64 reference.
//
// The floor is gemm.cu's: 2*M*N*K flops against (M*K + K*N + M*N) elements.
// The tensor cores raise the compute roof (an H100 SXM does 495 dense TF32
// TFLOP/s and 989 BF16, against 67 FP32), which moves the ridge point to
// ~150 flop/B for tf32: only big tiles reused from shared memory get there.
//
// The shared-memory staging holds 32-bit words: one tf32 element, or two bf16
// elements adjacent along k (the register layout mma.sync wants), so both
// precisions share one tile layout, and every word is converted once, when it
// is staged, rather than once per warp that reads it.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "convkit/backend/kernel_versions.h"
#include "kernels/async_copy.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/gemm_tensor_core.cuh"
#include "kernels/tensor_core.cuh"
#include "kernels/vector_access.cuh"
#include "kernels/warpgroup_mma.cuh"
#include "kernels/warpgroup_stage.cuh"

namespace convkit::CK_GPU_NS {

namespace {

struct TcOperands {
  const float* a;
  const float* b;
  float* c;
  std::int64_t M, N, K, batch;
  std::int64_t lda, ldb, ldc;
  std::int64_t stride_a, stride_b, stride_c;
  float alpha, beta;
  std::int64_t n_tiles;  // tiles along N, to decode blockIdx.x
};

// op(A)(m, k) or op(B)(k, n) written as X(x, k), x = m or n: stored at
// p[k * ld + x] when XContig (x runs along memory), else at p[x * ld + k].
// Zero outside the matrix.
template <bool XContig>
__device__ __forceinline__ float fetch(const float* p, std::int64_t ld, std::int64_t x, std::int64_t k,
                                       std::int64_t x_limit, std::int64_t K) {
  if (x >= x_limit || k >= K) return 0.0f;
  return XContig ? p[k * ld + x] : p[x * ld + k];
}

// Word kw (k0 + kw for tf32, the pair k0 + 2kw, k0 + 2kw + 1 for bf16) of row x.
template <TensorCorePrecision P, bool XContig>
__device__ __forceinline__ std::uint32_t fetch_word(const float* p, std::int64_t ld, std::int64_t x,
                                                    std::int64_t k0, int kw, std::int64_t x_limit, std::int64_t K) {
  return dev::word_of<P>([&](std::int64_t k) { return fetch<XContig>(p, ld, x, k, x_limit, K); }, k0, kw);
}

// Lane `lane`'s four accumulators of the 16x8 tile at (m0, n0), into C.
__device__ __forceinline__ void store_fragment(const TcOperands& p, float* c, std::int64_t m0, std::int64_t n0,
                                               unsigned lane, const float* acc) {
  CK_UNROLL
  for (int i = 0; i < 4; ++i) {
    const std::int64_t m = m0 + dev::mma_c_row(static_cast<int>(lane), i);
    const std::int64_t n = n0 + dev::mma_c_col(static_cast<int>(lane), i);
    if (m < p.M && n < p.N) {
      float* cp = c + m * p.ldc + n;
      *cp = p.beta == 0.0f ? p.alpha * acc[i] : p.alpha * acc[i] + p.beta * *cp;
    }
  }
}

// ---------------------------------------------------------------------------
// v1, one warp per 16x8 tile: each lane reads the elements of its A and B
// fragments straight from global memory, converts them and issues one mma per
// k-step. The fragment layout scatters a lane's reads over 2-4 rows, so a
// warp's loads touch 8-16 sectors for 128 useful bytes, and each element of A
// is read by N/8 warps, of B by M/16: the tensor cores idle on memory. The
// obviously right one, which v2 is tested against.
constexpr int kV1TileM = 16, kV1TileN = 8;

template <TensorCorePrecision P, bool TA, bool TB>
__global__ void __launch_bounds__(32) gemm_tc_v1_warp_per_tile(TcOperands p) {
  const unsigned lane = threadIdx.x;
  const int group = static_cast<int>(lane >> 2), tig = static_cast<int>(lane % 4);
  const std::int64_t m0 = (blockIdx.x / p.n_tiles) * kV1TileM;
  const std::int64_t n0 = (blockIdx.x % p.n_tiles) * kV1TileN;
  for (std::int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
    const float* a = p.a + b * p.stride_a;
    const float* bm = p.b + b * p.stride_b;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (std::int64_t k0 = 0; k0 < p.K; k0 += kMmaStepK<P>) {
      // Word (row, kw) of the A tile and (n, kw) of the B tile, as staged by v2:
      // registers a0..a3 are words (g, t), (g+8, t), (g, t+4), (g+8, t+4);
      // b0, b1 are (g, t), (g, t+4) (convkit/sim/mma.h).
      std::uint32_t af[4], bf[2];
      CK_UNROLL
      for (int r = 0; r < 4; ++r)
        af[r] = fetch_word<P, TA>(a, p.lda, m0 + group + (r & 1) * 8, k0, tig + (r >> 1) * 4, p.M, p.K);
      CK_UNROLL
      for (int r = 0; r < 2; ++r) bf[r] = fetch_word<P, !TB>(bm, p.ldb, n0 + group, k0, tig + r * 4, p.N, p.K);
      dev::mma<P>(acc, af, bf);
    }
    store_fragment(p, p.c + b * p.stride_c, m0, n0, lane, acc);
  }
}

// ---------------------------------------------------------------------------
// v2, warp tiling with a shared-memory double buffer: a 64x64 tile of C per
// block of 4 warps, each warp a 32x32 quarter (2 x 4 mma tiles of 16x8, 32
// accumulators per lane). Per k-step the block stages 64 rows of 8 words of
// op(A) and of op(B) in shared memory, converted once.
//   Global: each element is read once per block instead of once per warp:
//     2*64*64*8 flops per (64 + 64) * 8 elements (tf32; bf16 twice both) =
//     64 flop per element, 16 flop/B.
//   Shared: per k-step a warp reads 8 A registers and 8 B registers for 8
//     mmas. Rows are 8 words padded to 12: a fragment read touches words
//     (g * 12 + t) and (g * 12 + t + 4), g < 8, t < 4, which fall in 32
//     distinct banks: no conflicts.
//   Staging: a warp's 32 loads cover 4 rows of 8 consecutive words along k when
//     the operand is k-contiguous (A, or B transposed), and 4 k-rows of 8
//     consecutive x otherwise, so each load instruction moves 4 full sectors
//     of tf32 data (the minimum). The k-contiguous stores to shared memory
//     (rows 0..3 at word offsets 0, 12, 24, 36) put row 3 on row 0's banks
//     4..7: a 2-way conflict on those stores, measured in
//     docs/results/sim-profile/; a swizzle is the next version's fix.
//   Double buffer: the next tile's words are loaded into registers before the
//     mmas on the current one, and stored into the other buffer after, so the
//     global latency overlaps the tensor-core work with one barrier per
//     k-step. (cp.async would skip the registers; it is not emulated yet.)
namespace v2 {
constexpr int kTile = 64;           // block tile, M and N
constexpr int kWarpTile = 32;       // warp tile, M and N
constexpr int kWords = 8;           // 32-bit words per staged row (one mma k-step)
constexpr int kRowWords = kWords + 4;  // padded
constexpr int kThreads = 128;
constexpr int kMmaM = kWarpTile / 16;  // 2
constexpr int kMmaN = kWarpTile / 8;   // 4
constexpr int kWordsPerThread = kTile * kWords / kThreads;  // 4
}  // namespace v2

// A thread's share of one staged tile S[x][kw] of X (op(A): x = m; op(B): x = n).
template <TensorCorePrecision P, bool XContig>
struct Stager {
  std::uint32_t words[v2::kWordsPerThread];

  // The (x, kw) of the thread's r-th word; see the v2 head for why the two
  // orientations map lanes differently.
  __device__ __forceinline__ static void place(int r, int& x, int& kw) {
    const int i = static_cast<int>(threadIdx.x);
    if (XContig) {
      x = i % 8 + 8 * (i / 64) + 16 * r;
      kw = (i / 8) % 8;
    } else {
      const int linear = r * v2::kThreads + i;
      x = linear / v2::kWords;
      kw = linear % v2::kWords;
    }
  }

  __device__ __forceinline__ void load(const float* p, std::int64_t ld, std::int64_t x0, std::int64_t k0,
                                       std::int64_t x_limit, std::int64_t K) {
    CK_UNROLL
    for (int r = 0; r < v2::kWordsPerThread; ++r) {
      int x, kw;
      place(r, x, kw);
      words[r] = fetch_word<P, XContig>(p, ld, x0 + x, k0, kw, x_limit, K);
    }
  }

  __device__ __forceinline__ void store(std::uint32_t (*S)[v2::kRowWords]) const {
    CK_UNROLL
    for (int r = 0; r < v2::kWordsPerThread; ++r) {
      int x, kw;
      place(r, x, kw);
      S[x][kw] = words[r];
    }
  }
};

template <TensorCorePrecision P, bool TA, bool TB>
__global__ void __launch_bounds__(v2::kThreads) gemm_tc_v2_warp_tiled(TcOperands p) {
  using namespace v2;
  __shared__ SharedArray<std::uint32_t[2][kTile][kRowWords]> As;  // As[buf][m][kw]
  __shared__ SharedArray<std::uint32_t[2][kTile][kRowWords]> Bs;  // Bs[buf][n][kw]
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int group = static_cast<int>(lane >> 2), tig = static_cast<int>(lane % 4);
  const int wm = static_cast<int>(warp / 2) * kWarpTile, wn = static_cast<int>(warp % 2) * kWarpTile;
  const std::int64_t m0 = (blockIdx.x / p.n_tiles) * kTile;
  const std::int64_t n0 = (blockIdx.x % p.n_tiles) * kTile;
  constexpr int K_STEP = kMmaStepK<P>;
  const std::int64_t k_tiles = (p.K + K_STEP - 1) / K_STEP;
  for (std::int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
    const float* a = p.a + b * p.stride_a;
    const float* bm = p.b + b * p.stride_b;
    float acc[kMmaM][kMmaN][4] = {};
    Stager<P, TA> a_stage;
    Stager<P, !TB> b_stage;
    if (k_tiles > 0) {
      a_stage.load(a, p.lda, m0, 0, p.M, p.K);
      b_stage.load(bm, p.ldb, n0, 0, p.N, p.K);
      a_stage.store(As[0]);
      b_stage.store(Bs[0]);
    }
    __syncthreads();
    for (std::int64_t t = 0; t < k_tiles; ++t) {
      const int cur = static_cast<int>(t % 2);
      const bool more = t + 1 < k_tiles;
      if (more) {
        a_stage.load(a, p.lda, m0, (t + 1) * K_STEP, p.M, p.K);
        b_stage.load(bm, p.ldb, n0, (t + 1) * K_STEP, p.N, p.K);
      }
      std::uint32_t af[kMmaM][4], bf[kMmaN][2];
      CK_UNROLL
      for (int i = 0; i < kMmaM; ++i)
        CK_UNROLL
        for (int r = 0; r < 4; ++r) af[i][r] = As[cur][wm + i * 16 + group + (r & 1) * 8][tig + (r >> 1) * 4];
      CK_UNROLL
      for (int j = 0; j < kMmaN; ++j)
        CK_UNROLL
        for (int r = 0; r < 2; ++r) bf[j][r] = Bs[cur][wn + j * 8 + group][tig + r * 4];
      CK_UNROLL
      for (int i = 0; i < kMmaM; ++i)
        CK_UNROLL
        for (int j = 0; j < kMmaN; ++j) dev::mma<P>(acc[i][j], af[i], bf[j]);
      if (more) {
        a_stage.store(As[1 - cur]);
        b_stage.store(Bs[1 - cur]);
      }
      __syncthreads();
    }
    float* c = p.c + b * p.stride_c;
    CK_UNROLL
    for (int i = 0; i < kMmaM; ++i)
      CK_UNROLL
      for (int j = 0; j < kMmaN; ++j) store_fragment(p, c, m0 + wm + i * 16, n0 + wn + j * 8, lane, acc[i][j]);
  }
}

// ---------------------------------------------------------------------------
// v3, a 128x128 block tile of 8 warps with 16-byte staging. What v2 measured
// on an H200 (docs/gpu/measured-h200.md) at n = 4096: 33.6 TFLOP/s in TF32
// and 58.0 in BF16, 7% and 6% of the tensor cores' dense peak, slower than
// the FP32 SIMT kernel in TF32. Its blocks are too small and its stages too
// short: one barrier per 8 mma per warp, 16 flop per byte from global memory,
// and element-by-element staging loads with a bounds check each. v3:
//   Tile: 128x128 of C per block of 8 warps (2 along M x 4 along N), each
//     warp 64x32 (4 x 4 mma tiles of 16x8, 64 accumulators per lane): 2*128*128
//     flops per 2*128 elements of k, 32 flop/B of float32 from global memory,
//     twice v2's; a warp's 16 mma per k-step share 4 A and 4 B fragments.
//   Stage: 16 words of k (two mma k-steps) per barrier: 32 mma per warp, 4x v2.
//   Staging: each thread moves whole 16-byte vectors (load16) of float32 from
//     global memory when the operand allows them (aligned pointer, leading
//     dimension and batch stride multiples of 4) and the tile lies inside
//     the matrix; else element by element with bounds, as v2. Words are
//     converted once, in registers, before they are stored.
//   Layouts: an operand keeps in shared memory the orientation it has in
//     global memory, so that the four words of a thread's group are adjacent
//     there too: k-contiguous operands as S[x][kw] with rows
//     of 16 words padded to 20, x-contiguous ones as S[kw][x] with rows of 128
//     words padded to 136. Fragment reads touch words (g, t): at x * 20 + kw,
//     banks 20g + t (mod 32); at kw * 136 + x, banks 8t + g: 32 distinct
//     either way, no conflicts. A warp's staging stores are contiguous runs
//     in the x-contiguous layout; in the k-contiguous one, rows x and x + 1
//     are 20 words apart, so a quarter of them meet 2-way.
//   Double buffer: as v2, loads for the next stage are issued before the mma
//     on the current one and stored after them; two buffers of 2 x 10 KB.
// Each accumulator still takes its mma in increasing k, so v3 computes what v1
// and v2 compute, bit for bit under sim. Not the default until a GPU has
// measured it against v2 (gpu-check's bench_gemm times every version).
namespace v3 {
constexpr int kTile = 128;             // block tile, M and N
constexpr int kWarpM = 64, kWarpN = 32;
constexpr int kWarpsN = kTile / kWarpN;  // 4
constexpr int kWords = 16;             // 32-bit words of k per stage (two mma k-steps)
constexpr int kRowK = kWords + 4;      // S[x][kw] pitch, k-contiguous operands
constexpr int kRowX = kTile + 8;       // S[kw][x] pitch, x-contiguous operands
constexpr int kBufferWords = kTile * kRowK > kWords * kRowX ? kTile * kRowK : kWords * kRowX;  // 2560
constexpr int kThreads = 256;
constexpr int kMmaM = kWarpM / 16;  // 4
constexpr int kMmaN = kWarpN / 8;   // 4
constexpr int kWordsPerThread = kTile * kWords / kThreads;  // 8
}  // namespace v3

// Word (x, kw) of a staged operand: see the v3 head for the two layouts.
template <bool XContig>
__device__ __forceinline__ int v3_offset(int x, int kw) {
  return XContig ? kw * v3::kRowX + x : x * v3::kRowK + kw;
}

// A thread's share of one stage of X (op(A): x = m; op(B): x = n): 8 words,
// as four-word groups along the operand's contiguous direction: kw..kw+3 of
// one x (k-contiguous), or x..x+3 at one kw (x-contiguous). For bf16 a
// k-contiguous group of four words is two 16-byte loads, an x-contiguous one
// is the loads at k and k + 1.
template <TensorCorePrecision P, bool XContig>
struct WideStager {
  static constexpr int kGroups = v3::kWordsPerThread / 4;  // 2
  std::uint32_t words[v3::kWordsPerThread];

  // The first (x, kw) of the thread's group r. Lanes run along the contiguous
  // direction first, so a warp's loads are whole lines.
  __device__ __forceinline__ static void place(int r, int& x, int& kw) {
    const int g = r * v3::kThreads + static_cast<int>(threadIdx.x);
    if (XContig) {
      x = g % (v3::kTile / 4) * 4;
      kw = g / (v3::kTile / 4);
    } else {
      x = g / (v3::kWords / 4);
      kw = g % (v3::kWords / 4) * 4;
    }
  }

  __device__ __forceinline__ void load(const float* p, std::int64_t ld, std::int64_t x0, std::int64_t k0,
                                       std::int64_t x_limit, std::int64_t K, bool vec) {
    constexpr int E = kElementsPerWord<P>;
    const bool inside = vec && x0 + v3::kTile <= x_limit && k0 + v3::kWords * E <= K;
    CK_UNROLL
    for (int r = 0; r < kGroups; ++r) {
      int x, kw;
      place(r, x, kw);
      std::uint32_t* w = words + 4 * r;
      if (!inside) {
        CK_UNROLL
        for (int i = 0; i < 4; ++i)
          w[i] = XContig ? fetch_word<P, true>(p, ld, x0 + x + i, k0, kw, x_limit, K)
                         : fetch_word<P, false>(p, ld, x0 + x, k0, kw + i, x_limit, K);
        continue;
      }
      if (XContig) {
        // X(x, k) at p[k * ld + x]: four x at each k of the word.
        float f[2][4];
        CK_UNROLL
        for (int e = 0; e < E; ++e) dev::load16(p + (k0 + kw * E + e) * ld + x0 + x, f[e]);
        CK_UNROLL
        for (int i = 0; i < 4; ++i) {
          if constexpr (P == TensorCorePrecision::tf32) w[i] = dev::cvt_rna_tf32(f[0][i]);
          else w[i] = dev::pack_bf16x2(f[0][i], f[1][i]);
        }
      } else {
        // X(x, k) at p[x * ld + k]: the 4 * E elements of k of four words.
        const float* row = p + (x0 + x) * ld + k0 + kw * E;
        float f[8];
        CK_UNROLL
        for (int e = 0; e < E; ++e) dev::load16(row + 4 * e, f + 4 * e);
        CK_UNROLL
        for (int i = 0; i < 4; ++i) {
          if constexpr (P == TensorCorePrecision::tf32) w[i] = dev::cvt_rna_tf32(f[i]);
          else w[i] = dev::pack_bf16x2(f[2 * i], f[2 * i + 1]);
        }
      }
    }
  }

  __device__ __forceinline__ void store(std::uint32_t* S) const {
    CK_UNROLL
    for (int r = 0; r < kGroups; ++r) {
      int x, kw;
      place(r, x, kw);
      CK_UNROLL
      for (int i = 0; i < 4; ++i) S[XContig ? v3_offset<true>(x + i, kw) : v3_offset<false>(x, kw + i)] = words[4 * r + i];
    }
  }
};

template <TensorCorePrecision P, bool TA, bool TB>
__global__ void __launch_bounds__(v3::kThreads) gemm_tc_v3_wide_tiles(TcOperands p, bool vec) {
  using namespace v3;
  __shared__ __align__(16) SharedArray<std::uint32_t[2][kBufferWords]> As;
  __shared__ __align__(16) SharedArray<std::uint32_t[2][kBufferWords]> Bs;
  constexpr bool AX = TA, BX = !TB;  // x-contiguous: op(A) stored along m, op(B) along n
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int group = static_cast<int>(lane >> 2), tig = static_cast<int>(lane % 4);
  const int wm = static_cast<int>(warp / kWarpsN) * kWarpM, wn = static_cast<int>(warp % kWarpsN) * kWarpN;
  const std::int64_t m0 = (blockIdx.x / p.n_tiles) * kTile;
  const std::int64_t n0 = (blockIdx.x % p.n_tiles) * kTile;
  constexpr int K_STAGE = kWords * kElementsPerWord<P>;
  const std::int64_t stages = (p.K + K_STAGE - 1) / K_STAGE;
  for (std::int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
    const float* a = p.a + b * p.stride_a;
    const float* bm = p.b + b * p.stride_b;
    float acc[kMmaM][kMmaN][4] = {};
    WideStager<P, AX> a_stage;
    WideStager<P, BX> b_stage;
    if (stages > 0) {
      a_stage.load(a, p.lda, m0, 0, p.M, p.K, vec);
      b_stage.load(bm, p.ldb, n0, 0, p.N, p.K, vec);
      a_stage.store(As[0]);
      b_stage.store(Bs[0]);
    }
    __syncthreads();
    for (std::int64_t t = 0; t < stages; ++t) {
      const int cur = static_cast<int>(t % 2);
      const bool more = t + 1 < stages;
      if (more) {
        a_stage.load(a, p.lda, m0, (t + 1) * K_STAGE, p.M, p.K, vec);
        b_stage.load(bm, p.ldb, n0, (t + 1) * K_STAGE, p.N, p.K, vec);
      }
      CK_UNROLL
      for (int kk = 0; kk < kWords; kk += 8) {
        std::uint32_t af[kMmaM][4], bf[kMmaN][2];
        CK_UNROLL
        for (int i = 0; i < kMmaM; ++i)
          CK_UNROLL
          for (int r = 0; r < 4; ++r)
            af[i][r] = As[cur][v3_offset<AX>(wm + i * 16 + group + (r & 1) * 8, kk + tig + (r >> 1) * 4)];
        CK_UNROLL
        for (int j = 0; j < kMmaN; ++j)
          CK_UNROLL
          for (int r = 0; r < 2; ++r) bf[j][r] = Bs[cur][v3_offset<BX>(wn + j * 8 + group, kk + tig + r * 4)];
        CK_UNROLL
        for (int i = 0; i < kMmaM; ++i)
          CK_UNROLL
          for (int j = 0; j < kMmaN; ++j) dev::mma<P>(acc[i][j], af[i], bf[j]);
      }
      if (more) {
        a_stage.store(As[1 - cur]);
        b_stage.store(Bs[1 - cur]);
      }
      __syncthreads();
    }
    float* c = p.c + b * p.stride_c;
    CK_UNROLL
    for (int i = 0; i < kMmaM; ++i)
      CK_UNROLL
      for (int j = 0; j < kMmaN; ++j) store_fragment(p, c, m0 + wm + i * 16, n0 + wn + j * 8, lane, acc[i][j]);
  }
}

// ---------------------------------------------------------------------------
// v4, a three-stage cp.async pipeline. What v3 measured on an H200 at n = 4096
// (docs/gpu/measured-h200.md): 39.7 TFLOP/s in TF32 and 79.1 in BF16, 10% and
// 21% of cuBLAS. Its stages are short and fed through registers: each one is
// 2 x 128 rows of 16 words, loaded, converted and stored by the warps that
// then wait at a barrier, so every 32 mma per warp (256 per SM, a few hundred
// cycles) pays a global load's latency (600-800 cycles from HBM) that only one
// other stage can hide. v4:
//   Copy: cp.async moves the float32 operands straight into shared memory in
//     16-byte chunks (zero-filled past the matrix's edge), three stages of 32
//     elements of k deep, so two stages' loads are in flight while the warps
//     multiply the third; no staging registers, one barrier per stage of 4
//     (tf32) or 2 (bf16) mma k-steps of 32 mma per warp each. When an operand is not 16-byte aligned
//     (pointer, leading dimension or batch stride), each chunk is four 4-byte
//     copies instead, with the same layout.
//   Convert at the fragment read: since the copy cannot convert, each
//     fragment word is rounded (cvt.rna) or packed (two bf16) as a warp reads
//     it: 32 conversions per 32 mma per warp, and v1's rounding, so v4
//     computes what v1 computes, bit for bit under sim.
//   Tile: 128x128 per block, as v3, but of 4 warps of 64x64 (4 x 8 mma tiles,
//     128 accumulators per lane, 227-244 registers on sm_90, no spills on
//     sm_80 or sm_90): a warp's 32 mma
//     per k-step share 16 A and 16 B words. In tf32 that is one 4-byte
//     shared-memory read per mma where v3's 64x32 warps need 1.5; in bf16
//     an x-contiguous operand's word takes two 4-byte reads, so v4 reads as
//     often as v3 there. Two blocks (8 warps) per SM.
//   Layouts: each operand keeps its global orientation (as v3), in float32
//     rows whose pitch depends on the precision, so that fragment reads are
//     conflict-free:
//       k-contiguous S[x][k]: tf32 reads element (g, t) at bank 36g + t:
//         pitch 36 (4 mod 32); bf16 reads the pair (g, 2t) as one 8-byte load,
//         a half-warp's 16 pairs must cover the 32 banks: pitch 40 (8 mod 32).
//       x-contiguous S[k][x]: tf32 reads (k = t, x = g) at bank 8t + g: pitch
//         136 (8 mod 32); bf16 reads k = 2t and 2t + 1 at x = g, banks 8t + g
//         and 8t + 4 + g: pitch 132 (4 mod 32).
//     A quarter-warp's chunk stores fill one 128-byte row (k-contiguous: 8
//     chunks of one row; x-contiguous: a quarter of one): conflict-free.
//   Shared memory: 3 stages of 8,960 floats (tf32, A row-major, B row-major)
//     = 105 KB, 110 KB in bf16, up to 120 KB when both operands are
//     k-contiguous in bf16. Two blocks fit an SM (228 KB) in all layouts but
//     that last, which runs one. Dynamic shared memory above 48 KB needs the
//     kernel's opt-in (allow_dynamic_shared).
// Predicted, not measured: with the copies' latency off the warps' path the
// bound moves to the shared-memory reads (128 bytes per tf32 mma, 256 per
// bf16 one: 16 flop per byte either way) and mma.sync's issue rate; the
// model's roofline is in
// docs/gpu/gemm_tensor_core.md.
// Each launch sets the kernel's shared-memory opt-in again
// (cudaFuncSetAttribute, a host call of about a microsecond): simpler than
// remembering it per kernel and device, and v4 is not the default.
namespace v4 {
constexpr int kTile = 128;  // block tile, M and N
constexpr int kWarpM = 64, kWarpN = 64;
constexpr int kWarpsN = kTile / kWarpN;  // 2
constexpr int kStageK = 32;              // float32 elements of k per stage
constexpr int kStages = 3;
constexpr int kThreads = 128;
constexpr int kMmaM = kWarpM / 16;  // 4
constexpr int kMmaN = kWarpN / 8;   // 8
constexpr int kChunks = kTile * kStageK / 4 / kThreads;  // 16-byte chunks per thread and operand: 8
}  // namespace v4

// One operand's stage: float32 elements in the operand's global orientation,
// rows padded for precision P's fragment reads (v4 head).
template <TensorCorePrecision P, bool XContig>
struct V4Stage {
  static constexpr bool kTf32 = P == TensorCorePrecision::tf32;
  static constexpr int kPitch = XContig ? v4::kTile + (kTf32 ? 8 : 4) : v4::kStageK + (kTf32 ? 4 : 8);
  static constexpr int kFloats = (XContig ? v4::kStageK : v4::kTile) * kPitch;

  __device__ __forceinline__ static int offset(int x, int k) { return XContig ? k * kPitch + x : x * kPitch + k; }

  // Fragment word kw of row x, converted as it is read; v5's tf32 stages
  // are rounded when they land (Rounded), and their words are read as they are.
  template <bool Rounded>
  __device__ __forceinline__ static std::uint32_t word(const float* s, int x, int kw) {
    return dev::stage_word<P, XContig, kPitch, Rounded>(s, x, kw);
  }
};

// How a copier issues its 16-byte chunks: four 4-byte copies (operands not
// 16-byte aligned), one 16-byte copy of src_bytes (v4), or one 16-byte copy
// that is whole or zeros (v5, where every chunk lies wholly inside or wholly
// outside the operand: aligned, with M, N and K multiples of 4).
enum class ChunkCopy { four_bytes, sized, whole };

// A thread's share of the copies of X (op(A): x = m; op(B): x = n): kChunks
// 16-byte chunks per stage, lanes along the contiguous direction so that a
// warp copies whole lines. Chunk r sits at (x, k + 4r) when x runs along
// memory, else at (x + 16r, k): one source pointer covers them all, and it
// moves by a stage's k after each copy. It holds three registers: the
// leading dimension stays in the kernel's parameters and the place in the
// tile is recomputed from threadIdx, leaving the registers to v4's 128
// accumulators and 32 fragment words.
template <TensorCorePrecision P, bool XContig, ChunkCopy Mode>
struct V4Copier {
  using Stage = V4Stage<P, XContig>;
  static constexpr int kRowStepX = XContig ? 0 : v4::kThreads / (v4::kStageK / 4);  // 16
  static constexpr int kRowStepK = XContig ? v4::kThreads / (v4::kTile / 4) : 0;    // 4
  const float* src;  // chunk 0 of the next stage
  int x_room;        // elements of x from chunk 0 to the operand's edge (at most 2^30)

  __device__ __forceinline__ static int x() {
    const int i = static_cast<int>(threadIdx.x);
    return XContig ? i % (v4::kTile / 4) * 4 : i / (v4::kStageK / 4);
  }
  __device__ __forceinline__ static int k() {
    const int i = static_cast<int>(threadIdx.x);
    return XContig ? i / (v4::kTile / 4) : i % (v4::kStageK / 4) * 4;
  }

  __device__ __forceinline__ V4Copier(const float* p, std::int64_t ld, std::int64_t x0, std::int64_t x_limit) {
    src = XContig ? p + k() * ld + x0 + x() : p + (x0 + x()) * ld + k();
    const std::int64_t room = x_limit - x0 - x();
    x_room = room < (1 << 30) ? static_cast<int>(room) : 1 << 30;
  }

  // Elements of chunk r inside the operand, given k_room, the elements of k
  // from chunk 0 to K: along the contiguous direction up to 4, else 4 or 0.
  __device__ __forceinline__ int inside(int r, std::int64_t k_room) const {
    const std::int64_t xr = x_room - r * kRowStepX, kr = k_room - r * kRowStepK;
    const std::int64_t along = XContig ? xr : kr, across = XContig ? kr : xr;
    if (across <= 0 || along <= 0) return 0;
    return along < 4 ? static_cast<int>(along) : 4;
  }

  // Issues the copies of the stage at k0 into `stage` (any: a valid address
  // for copies that read nothing) and moves on to the next stage.
  __device__ __forceinline__ void copy(float* stage, const float* any, std::int64_t ld, std::int64_t k0,
                                       std::int64_t K) {
    const std::int64_t k_room = K - k0 - k();
    CK_UNROLL
    for (int r = 0; r < v4::kChunks; ++r) {
      float* dst = stage + Stage::offset(x() + r * kRowStepX, k() + r * kRowStepK);
      const float* from = src + r * (XContig ? kRowStepK * ld : kRowStepX * ld);
      const int n = inside(r, k_room);
      if constexpr (Mode == ChunkCopy::whole) {
        dev::cp_async16_or_zeros(dst, n > 0 ? from : any, n > 0);
      } else if constexpr (Mode == ChunkCopy::sized) {
        dev::cp_async<16>(dst, n > 0 ? from : any, 4 * n);
      } else {
        CK_UNROLL
        for (int e = 0; e < 4; ++e) dev::cp_async<4>(dst + e, e < n ? from + e : any, e < n ? 4 : 0);
      }
    }
    src += XContig ? v4::kStageK * ld : v4::kStageK;
  }

  // v5, tf32: rounds this thread's chunks of a landed stage in place (the
  // chunks copy() wrote there; zero-filled ones stay zeros).
  __device__ __forceinline__ static void round_tf32(float* stage) {
    CK_UNROLL
    for (int r = 0; r < v4::kChunks; ++r) {
      float* at = stage + Stage::offset(x() + r * kRowStepX, k() + r * kRowStepK);
      float v[4];
      dev::load16(at, v);
      CK_UNROLL
      for (int e = 0; e < 4; ++e) v[e] = dev::tf32_rounded(v[e]);
      dev::store16(at, v);
    }
  }
};

template <TensorCorePrecision P, bool TA, bool TB>
constexpr std::size_t v4_shared_bytes() {
  return v4::kStages * (V4Stage<P, TA>::kFloats + V4Stage<P, !TB>::kFloats) * sizeof(float);
}

// The larger of the two precisions' (cannot_implement does not know which runs).
std::size_t v4_largest_shared_bytes(bool trans_a, bool trans_b) {
  std::size_t bytes = 0;
  with_transposes(trans_a, trans_b, [&](auto ta, auto tb) {
    constexpr bool TA = decltype(ta)::value, TB = decltype(tb)::value;
    bytes = std::max(v4_shared_bytes<TensorCorePrecision::tf32, TA, TB>(),
                     v4_shared_bytes<TensorCorePrecision::bf16, TA, TB>());
  });
  return bytes;
}

// v5, v4 with two costs of its main loop moved. Nsight Compute on the H200
// (docs/results/nvidia-h200-2026-11-28, run 2) found v4 at 6.8 instructions
// per tf32 mma, 2 warps per scheduler issuing 0.42 per cycle, stalled on
// fixed-latency dependencies; its SASS (nvcc 13.0, sm_90) shows where the
// instructions go, per mma: the mma, its fragment load, 2 for the rounding
// (cvt.rna.tf32 becomes FSETP and IMAD on sm_90), between the load and the
// mma, and 2.3 for the copies (about 14 per 16-byte chunk, 6 of them ptxas's
// adjustment of the source address for src_bytes).
//   Round once (tf32): as a stage lands, each thread rounds the chunks it
//     copied, in place (16-byte loads and stores), before the barrier that
//     publishes the stage; fragment reads are plain loads. Two warps read
//     every word, so half the roundings go, and none sits between a fragment
//     load and its mma. bf16 keeps v4's packing at the read: packed in place
//     its words would be read 2-way conflicted (a word at every other float),
//     and a packed copy does not fit beside two blocks' stages.
//   Whole copies: where every chunk lies wholly inside or wholly outside the
//     operand (aligned operands, M, N and K multiples of 4), a chunk is
//     cp.async with the ignore-src predicate, which needs no address
//     adjustment; elsewhere v4's copies.
// The rounding is v1's (cvt.rna), in the same order: v5 computes what v1
// computes, bit for bit under sim. What the SASS shows (nvcc 13.0, sm_90,
// tf32, A and B row-major, whole copies), per stage of 128 mma per warp: the
// inner loop is 138 instructions per 64 mma (v4: 267), fragment loads
// feeding the mma directly; the copies and the rounding take 441 (v4's
// copies 318), because a rounding in place costs 3 instructions per element
// (FSETP, IMAD, LOP3) where the one at a fragment read costs 2 (the mma
// ignores the low bits, so no mask). In all 5.6 instructions per mma against
// 6.7. Predicted: 1.1-1.3x v4 in tf32, a few percent in bf16. Measured on
// the H200 (docs/results/nvidia-h200-2026-11-28, run 3): 0.91x v4 in tf32 at
// n = 4096, 1.02-1.06x in bf16. The roundings sit between a stage's landing
// and the barrier that every warp waits at, where v4's are spread among the
// mma: fewer instructions, longer waits. v4 stays the default.
//
// v4's and v5's kernel (v5: RoundOnce, and whole-chunk copies where Mode says).
template <TensorCorePrecision P, bool TA, bool TB, ChunkCopy Mode, bool RoundOnce>
__device__ __forceinline__ void async_pipeline(const TcOperands& p) {
  using namespace v4;
  constexpr bool AX = TA, BX = !TB;  // x-contiguous: op(A) stored along m, op(B) along n
  using SA = V4Stage<P, AX>;
  using SB = V4Stage<P, BX>;
  CK_DYNAMIC_SHARED(float, smem);
  float* const a_stages = smem;
  float* const b_stages = smem + kStages * SA::kFloats;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int group = static_cast<int>(lane >> 2), tig = static_cast<int>(lane % 4);
  const int wm = static_cast<int>(warp / kWarpsN) * kWarpM, wn = static_cast<int>(warp % kWarpsN) * kWarpN;
  const std::int64_t m0 = (blockIdx.x / p.n_tiles) * kTile;
  const std::int64_t n0 = (blockIdx.x % p.n_tiles) * kTile;
  const std::int64_t stages = (p.K + kStageK - 1) / kStageK;
  for (std::int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
    const float* a = p.a + b * p.stride_a;
    const float* bm = p.b + b * p.stride_b;
    V4Copier<P, AX, Mode> a_copy(a, p.lda, m0, p.M);
    V4Copier<P, BX, Mode> b_copy(bm, p.ldb, n0, p.N);
    CK_UNROLL
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < stages) {
        a_copy.copy(a_stages + s * SA::kFloats, a, p.lda, s * kStageK, p.K);
        b_copy.copy(b_stages + s * SB::kFloats, bm, p.ldb, s * kStageK, p.K);
      }
      dev::cp_async_commit();  // possibly empty: keeps the group count fixed
    }
    float acc[kMmaM][kMmaN][4] = {};
    for (std::int64_t t = 0; t < stages; ++t) {
      dev::cp_async_wait<kStages - 2>();  // stage t has landed (for this thread)
      if constexpr (RoundOnce && P == TensorCorePrecision::tf32) {
        V4Copier<P, AX, Mode>::round_tf32(a_stages + t % kStages * SA::kFloats);
        V4Copier<P, BX, Mode>::round_tf32(b_stages + t % kStages * SB::kFloats);
      }
      __syncthreads();  // ... for all, and stage t - 1 is consumed
      const std::int64_t next = t + kStages - 1;
      if (next < stages) {
        a_copy.copy(a_stages + next % kStages * SA::kFloats, a, p.lda, next * kStageK, p.K);
        b_copy.copy(b_stages + next % kStages * SB::kFloats, bm, p.ldb, next * kStageK, p.K);
      }
      dev::cp_async_commit();
      const float* as = a_stages + t % kStages * SA::kFloats;
      const float* bs = b_stages + t % kStages * SB::kFloats;
      // Two mma k-steps at a time: unrolling all four of a tf32 stage lets
      // nvcc hoist their fragment reads (128 words) past the 255 registers.
      CK_NO_UNROLL
      for (int kw0 = 0; kw0 < kStageK / kElementsPerWord<P>; kw0 += 16)
      CK_UNROLL
      for (int kw = kw0; kw < kw0 + 16; kw += 8) {
        std::uint32_t af[kMmaM][4], bf[kMmaN][2];
        CK_UNROLL
        for (int i = 0; i < kMmaM; ++i)
          CK_UNROLL
          for (int r = 0; r < 4; ++r)
            af[i][r] = SA::template word<RoundOnce>(as, wm + i * 16 + group + (r & 1) * 8, kw + tig + (r >> 1) * 4);
        CK_UNROLL
        for (int j = 0; j < kMmaN; ++j)
          CK_UNROLL
          for (int r = 0; r < 2; ++r) bf[j][r] = SB::template word<RoundOnce>(bs, wn + j * 8 + group, kw + tig + r * 4);
        CK_UNROLL
        for (int i = 0; i < kMmaM; ++i)
          CK_UNROLL
          for (int j = 0; j < kMmaN; ++j) dev::mma<P>(acc[i][j], af[i], bf[j]);
      }
    }
    dev::cp_async_wait<0>();  // only empty groups are left
    __syncthreads();          // every warp is done with the stages before the next batch refills them
    float* c = p.c + b * p.stride_c;
    CK_UNROLL
    for (int i = 0; i < kMmaM; ++i)
      CK_UNROLL
      for (int j = 0; j < kMmaN; ++j) store_fragment(p, c, m0 + wm + i * 16, n0 + wn + j * 8, lane, acc[i][j]);
  }
}

template <TensorCorePrecision P, bool TA, bool TB, ChunkCopy Mode>
__global__ void __launch_bounds__(v4::kThreads, 2) gemm_tc_v4_async_pipeline(TcOperands p) {
  async_pipeline<P, TA, TB, Mode, false>(p);
}

template <TensorCorePrecision P, bool TA, bool TB, ChunkCopy Mode>
__global__ void __launch_bounds__(v4::kThreads, 2) gemm_tc_v5_rounded_stages(TcOperands p) {
  async_pipeline<P, TA, TB, Mode, true>(p);
}

// ---------------------------------------------------------------------------
// v6, wgmma (sm_90a). What bounds v4 on the H200 (Nsight Compute, run 2 of
// docs/results/nvidia-h200-2026-11-28): instruction issue, 6.8 instructions
// per m16n8k8 mma, two warps per scheduler waiting on conversions that feed
// each mma. mma.sync is a warp's instruction on fragments in registers: every
// 2,048 flops cost a fragment load and an mma issued by that warp. Hopper's
// wgmma is a warpgroup's (4 warps) instruction that reads both operands from
// shared memory by descriptor and runs asynchronously: one m64n128k8 is
// 131,072 flops from one issue, and the warps are free while it runs. It is
// what cuBLAS runs on this GPU (0.30x of it was v4's TF32 at n = 4096).
//   Operands: tf32 wgmma reads K-major operands only (no transpose for 32-bit
//     types), so v6 runs where op(A) and op(B) are both k-contiguous: A not
//     transposed, B transposed (C = A B^T, as a Linear layer's forward).
//     Elsewhere it cannot implement, and v4 runs.
//   Layout: each operand's stage is 128 rows of 32 floats (128 bytes) in the
//     128-byte swizzle: 16-byte unit c of row x at unit c ^ (x % 8). A
//     quarter-warp's eight 16-byte copies fill one row: conflict-free. The
//     wgmma of k-slice j (8 floats, 32 bytes) starts its descriptor 32j bytes
//     into the row; the hardware applies the swizzle to the address, so the
//     stages start at multiples of 1024 bytes of shared address.
//   Block: 256 threads, two warpgroups, 128x128 of C: warpgroup g multiplies
//     rows 64g..64g+63 by all 128 columns, one m64n128k8 per k-slice, 64
//     accumulators per thread. Three stages of 32 KB (+1 KB to align): two
//     blocks per SM.
//   Rounding: the contract is cvt.rna to tf32 (wgmma would read the float32
//     bits and drop the low 13). As in v5 each thread rounds the chunks it
//     copied, in place, once they land; unlike v5 the previous stage's wgmma
//     is running meanwhile, so the rounding is off the tensor cores' path.
//   Order per stage t: wait for this thread's copies of t, round them, make
//     them visible to wgmma (fence.proxy.async), wait for this warpgroup's
//     wgmma of t - 1 (its stage is about to be refilled), barrier, issue the
//     copies of t + 2, issue the four wgmma of t.
// The sums run in v1's order (k-slices of 8, increasing), so under sim v6
// gives v1's bits. Written and tested on sim, with layouts from the PTX ISA
// (convkit/sim/wgmma.h); no GPU has run it yet. It is never the default
// until one has (CONVKIT_KERNEL_GEMM_TENSOR_CORE=6 selects it).
namespace v6 {
constexpr int kTile = 128;                                // block tile, M and N
constexpr int kStageK = 32;                               // floats of k per stage: one 128-byte row
constexpr int kStages = 3;
constexpr int kThreads = 256;                             // two warpgroups
constexpr int kRowBytes = kStageK * 4;                    // 128
constexpr int kOperandBytes = kTile * kRowBytes;          // 16 KB
constexpr int kStageBytes = 2 * kOperandBytes;            // A, then B
constexpr int kRowsPerPass = kThreads / (kStageK / 4);    // 32 rows copied per pass of the block
constexpr int kChunks = kTile / kRowsPerPass;             // 16-byte chunks per thread and operand: 4
constexpr int kAccumulators = 64 * 128 / 128;             // m64n128 over a warpgroup's 128 threads
constexpr std::size_t kSharedBytes = kStages * kStageBytes + 1024;  // + what wgmma_aligned may skip
static_assert(kStageK == 32, "a stage is dev::wgmma_tf32_stage's 32 k");
}  // namespace v6

// A thread's share of one operand's copies (k-contiguous: row x of the tile
// holds X(x, k0..k0+31)): chunk column c = thread % 8, rows thread / 8 + 32r.
template <ChunkCopy Mode>
struct V6Copier {
  const float* src;  // chunk 0 of the next stage
  int x_room;        // rows from this thread's first row to the operand's edge (at most 2^30)

  __device__ __forceinline__ static int column() { return static_cast<int>(threadIdx.x % 8); }
  __device__ __forceinline__ static int row() { return static_cast<int>(threadIdx.x / 8); }
  // Byte offset of chunk r in a stage: unit column() of row row() + 32r, swizzled.
  __device__ __forceinline__ static int offset(int r) {
    const int x = row() + r * v6::kRowsPerPass;
    return x * v6::kRowBytes + ((column() ^ (x % 8)) * 16);
  }

  __device__ __forceinline__ V6Copier(const float* p, std::int64_t ld, std::int64_t x0, std::int64_t x_limit) {
    src = p + (x0 + row()) * ld + column() * 4;
    const std::int64_t room = x_limit - x0 - row();
    x_room = room < (1 << 30) ? static_cast<int>(room) : 1 << 30;
  }

  __device__ __forceinline__ void copy(unsigned char* stage, const float* any, std::int64_t ld, std::int64_t k0,
                                       std::int64_t K) {
    const std::int64_t k_room = K - k0 - column() * 4;
    const int along = k_room <= 0 ? 0 : k_room < 4 ? static_cast<int>(k_room) : 4;
    CK_UNROLL
    for (int r = 0; r < v6::kChunks; ++r) {
      auto* dst = reinterpret_cast<float*>(stage + offset(r));
      const float* from = src + r * v6::kRowsPerPass * ld;
      const int n = x_room - r * v6::kRowsPerPass > 0 ? along : 0;
      if constexpr (Mode == ChunkCopy::whole) {
        dev::cp_async16_or_zeros(dst, n > 0 ? from : any, n > 0);
      } else if constexpr (Mode == ChunkCopy::sized) {
        dev::cp_async<16>(dst, n > 0 ? from : any, 4 * n);
      } else {
        CK_UNROLL
        for (int e = 0; e < 4; ++e) dev::cp_async<4>(dst + e, e < n ? from + e : any, e < n ? 4 : 0);
      }
    }
    src += v6::kStageK;
  }

  // Rounds this thread's chunks of a landed stage to tf32, in place.
  __device__ __forceinline__ static void round_tf32(unsigned char* stage) {
    CK_UNROLL
    for (int r = 0; r < v6::kChunks; ++r) {
      auto* at = reinterpret_cast<float*>(stage + offset(r));
      float v[4];
      dev::load16(at, v);
      CK_UNROLL
      for (int e = 0; e < 4; ++e) v[e] = dev::tf32_rounded(v[e]);
      dev::store16(at, v);
    }
  }
};

// v6's and v7's epilogue: a warpgroup's 64 x 128 of C from its m64n128
// accumulators, N/8 mma.m16n8 tiles per warp (convkit/sim/wgmma.h).
__device__ __forceinline__ void store_warpgroup_tile(const TcOperands& p, float* c, std::int64_t m0, std::int64_t n0,
                                                     const float* acc) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int64_t row0 = m0 + (warp / 4) * 64 + (warp % 4) * 16;
  CK_UNROLL
  for (int j = 0; j < 128 / 8; ++j) store_fragment(p, c, row0, n0 + j * 8, lane, acc + 4 * j);
}

template <ChunkCopy Mode>
__global__ void __launch_bounds__(v6::kThreads, 2) gemm_tc_v6_wgmma(TcOperands p) {
  using namespace v6;
  CK_DYNAMIC_SHARED(unsigned char, raw);
  unsigned char* const smem = dev::wgmma_aligned(raw);
  const std::uint32_t smem_address = dev::shared_address(smem);
  const int warpgroup = static_cast<int>(threadIdx.x / 128);
  const std::int64_t m0 = (blockIdx.x / p.n_tiles) * kTile;
  const std::int64_t n0 = (blockIdx.x % p.n_tiles) * kTile;
  const std::int64_t stages = (p.K + kStageK - 1) / kStageK;
  for (std::int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
    const float* a = p.a + b * p.stride_a;
    const float* bm = p.b + b * p.stride_b;
    V6Copier<Mode> a_copy(a, p.lda, m0, p.M);
    V6Copier<Mode> b_copy(bm, p.ldb, n0, p.N);
    CK_UNROLL
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < stages) {
        a_copy.copy(smem + s * kStageBytes, a, p.lda, s * kStageK, p.K);
        b_copy.copy(smem + s * kStageBytes + kOperandBytes, bm, p.ldb, s * kStageK, p.K);
      }
      dev::cp_async_commit();  // possibly empty: keeps the group count fixed
    }
    float acc[kAccumulators];
    CK_UNROLL
    for (int i = 0; i < kAccumulators; ++i) acc[i] = 0.0f;
    dev::wgmma_fence_operands<kAccumulators>(acc);
    for (std::int64_t t = 0; t < stages; ++t) {
      unsigned char* const stage = smem + t % kStages * kStageBytes;
      dev::cp_async_wait<kStages - 2>();  // this thread's copies of stage t have landed
      V6Copier<Mode>::round_tf32(stage);
      V6Copier<Mode>::round_tf32(stage + kOperandBytes);
      dev::fence_proxy_async();  // ... and are visible to wgmma's reads
      dev::wgmma_wait<0>();      // this warpgroup is done with stage t - 1
      __syncthreads();           // stage t is whole, stage t - 1 free everywhere
      const std::int64_t next = t + kStages - 1;
      if (next < stages) {
        unsigned char* const refill = smem + next % kStages * kStageBytes;
        a_copy.copy(refill, a, p.lda, next * kStageK, p.K);
        b_copy.copy(refill + kOperandBytes, bm, p.ldb, next * kStageK, p.K);
      }
      dev::cp_async_commit();
      const std::uint32_t a_rows = smem_address + static_cast<std::uint32_t>(t % kStages * kStageBytes +
                                                                             warpgroup * 64 * kRowBytes);
      const std::uint32_t b_rows = smem_address + static_cast<std::uint32_t>(t % kStages * kStageBytes + kOperandBytes);
      dev::wgmma_tf32_stage(acc, a_rows, b_rows);
    }
    dev::wgmma_wait<0>();
    dev::wgmma_fence_operands<kAccumulators>(acc);
    dev::cp_async_wait<0>();  // only empty groups are left
    __syncthreads();          // every warp is done with the stages before the next batch refills them
    store_warpgroup_tile(p, p.c + b * p.stride_c, m0, n0, acc);
  }
}

// ---------------------------------------------------------------------------
// v7, wgmma from register-staged stages: every transpose pair, tf32 and bf16.
// v6 copies float32 into shared memory with cp.async, which can neither
// convert nor transpose, so it runs tf32 with both operands k-contiguous
// only (tf32 wgmma reads K-major operands). v7 stages through registers, as
// v3 did, but with wgmma's asynchrony to hide it:
//   Stage: each thread loads 16 floats of each operand (four 16-byte loads),
//     converts them (cvt.rna to tf32, or pairs packed to bf16) and stores
//     them K-major into a swizzled stage of 32 elements of k: tf32 rows of
//     128 bytes in the 128-byte swizzle, bf16 rows of 64 bytes in the
//     64-byte swizzle. A k-contiguous operand is loaded as v6 copies it;
//     an x-contiguous one (A transposed, B not) as a 4 x 4 block per thread,
//     four 16-byte loads along x at four k, and stored transposed: four rows
//     of 4 k, in a per-lane rotated order that keeps every store phase
//     conflict-free (kernels/warpgroup_stage.cuh, shared with the
//     tensor-core conv's backward-weights; checked by the sim profile test
//     in every layout).
//   Pipeline: two stages in shared memory and one in registers. Per stage t:
//     issue the wgmma of t; wait for this warpgroup's wgmma of t - 1; a
//     barrier (every warpgroup is done with the other stage); store stage
//     t + 1 from the registers into it; load stage t + 2 into the registers;
//     a barrier (stage t + 1 is whole). The wgmma of t run while the threads
//     convert and store t + 1, and the loads of t + 2 have the whole of the
//     next stage to arrive.
//   Block, tile and epilogue: v6's (two warpgroups, 128x128, m64n128k8 for
//     tf32 and m64n128k16 for bf16, 64 accumulators per thread). Shared
//     memory: 2 stages of 32 KB (tf32) or 16 KB (bf16), plus 1 KB to align.
//     The staged registers on top of the accumulators take 154-183
//     registers (nvcc 13.0, sm_90a; capped at 128 for two blocks per SM,
//     ptxas spilled up to 136 bytes), so one block of 8 warps runs per SM.
// The sums run in v1's order, so under sim v7 gives v1's bits. Written and
// tested on sim; no GPU has run it (CONVKIT_KERNEL_GEMM_TENSOR_CORE=7).
namespace v7 {
constexpr int kTile = 128;
constexpr int kStageK = 32;  // elements of k per stage
constexpr int kThreads = 256;
constexpr int kSlots = 2;    // stages in shared memory
constexpr int kAccumulators = 64;
template <TensorCorePrecision P>
inline constexpr int kRowBytes = P == TensorCorePrecision::tf32 ? 128 : 64;  // 32 elements of k
template <TensorCorePrecision P>
inline constexpr int kOperandBytes = kTile * kRowBytes<P>;
template <TensorCorePrecision P>
inline constexpr std::size_t kSharedBytes = kSlots * 2 * kOperandBytes<P> + 1024;  // + what wgmma_aligned may skip
}  // namespace v7

// One operand's share of a thread: loads 16 floats of stage k0 into
// registers and stores them, converted, into a stage. X(x, k) is p[x * ld + k]
// (k-contiguous) or p[k * ld + x] (XContig).
template <TensorCorePrecision P, bool XContig, bool Vec>
struct V7Stager {
  float v[4][4];

  // k-contiguous: chunk column c and first row (v6's copy layout).
  __device__ __forceinline__ static int column() { return static_cast<int>(threadIdx.x % 8); }
  __device__ __forceinline__ static int row() { return static_cast<int>(threadIdx.x / 8); }

  __device__ __forceinline__ void load(const float* p, std::int64_t ld, std::int64_t x0, std::int64_t x_limit,
                                       std::int64_t k0, std::int64_t K) {
    if constexpr (!XContig) {
      const std::int64_t k = k0 + column() * 4;
      const int k_inside = k >= K ? 0 : K - k < 4 ? static_cast<int>(K - k) : 4;
      CK_UNROLL
      for (int r = 0; r < 4; ++r) {
        const std::int64_t x = x0 + row() + 32 * r;
        warpgroup_stage::load4<Vec>(p + x * ld + k, x < x_limit ? k_inside : 0, v[r]);
      }
    } else {
      // x-contiguous: the thread's 4 x 4 block (kernels/warpgroup_stage.cuh).
      const std::int64_t x = x0 + 4 * warpgroup_stage::block_x();
      const int x_inside = x >= x_limit ? 0 : x_limit - x < 4 ? static_cast<int>(x_limit - x) : 4;
      CK_UNROLL
      for (int kk = 0; kk < 4; ++kk) {
        const std::int64_t k = k0 + 4 * warpgroup_stage::block_k() + kk;
        warpgroup_stage::load4<Vec>(p + k * ld + x, k < K ? x_inside : 0, v[kk]);
      }
    }
  }

  __device__ __forceinline__ void store(unsigned char* stage) const {
    if constexpr (!XContig) {
      CK_UNROLL
      for (int r = 0; r < 4; ++r) warpgroup_stage::store4<P>(stage, row() + 32 * r, column(), v[r]);
    } else {
      warpgroup_stage::store_block_transposed<P>(stage, v);
    }
  }
};

// The descriptor of k-slice j (8 tf32 or 16 bf16: 32 bytes) of the rows
// starting at shared address `rows`: 8-row atoms of 1024 (tf32) or 512 bytes.
template <TensorCorePrecision P>
__device__ __forceinline__ std::uint64_t v7_descriptor(std::uint32_t rows, int j) {
  const std::uint32_t at = rows + static_cast<std::uint32_t>(32 * j);
  if constexpr (P == TensorCorePrecision::tf32) return dev::swizzle128_descriptor(at);
  else return dev::wgmma_descriptor(at, 16, 512, dev::WgmmaSwizzle::bytes64);
}

template <TensorCorePrecision P, bool TA, bool TB, bool Vec>
__global__ void __launch_bounds__(v7::kThreads, 1) gemm_tc_v7_wgmma_staged(TcOperands p) {
  using namespace v7;
  constexpr bool AX = TA, BX = !TB;  // x-contiguous: op(A) stored along m, op(B) along n
  constexpr int kOperand = kOperandBytes<P>, kSlices = kStageK / kMmaStepK<P>;
  CK_DYNAMIC_SHARED(unsigned char, raw);
  unsigned char* const smem = dev::wgmma_aligned(raw);
  const std::uint32_t smem_address = dev::shared_address(smem);
  const int warpgroup = static_cast<int>(threadIdx.x / 128);
  const std::int64_t m0 = (blockIdx.x / p.n_tiles) * kTile;
  const std::int64_t n0 = (blockIdx.x % p.n_tiles) * kTile;
  const std::int64_t stages = (p.K + kStageK - 1) / kStageK;
  const auto slot = [&](std::int64_t t) { return smem + t % kSlots * 2 * kOperand; };
  for (std::int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
    const float* a = p.a + b * p.stride_a;
    const float* bm = p.b + b * p.stride_b;
    V7Stager<P, AX, Vec> a_stage;
    V7Stager<P, BX, Vec> b_stage;
    float acc[kAccumulators];
    CK_UNROLL
    for (int i = 0; i < kAccumulators; ++i) acc[i] = 0.0f;
    dev::wgmma_fence_operands<kAccumulators>(acc);
    for (std::int64_t t = 0; t < 2 && t < stages; ++t) {
      a_stage.load(a, p.lda, m0, p.M, t * kStageK, p.K);
      b_stage.load(bm, p.ldb, n0, p.N, t * kStageK, p.K);
      if (t == 0) {
        a_stage.store(slot(0));
        b_stage.store(slot(0) + kOperand);
      }
    }
    dev::fence_proxy_async();
    __syncthreads();
    for (std::int64_t t = 0; t < stages; ++t) {
      const std::uint32_t at = smem_address + static_cast<std::uint32_t>(slot(t) - smem);
      const std::uint32_t a_rows = at + static_cast<std::uint32_t>(warpgroup * 64 * kRowBytes<P>);
      dev::wgmma_fence_operands<kAccumulators>(acc);
      dev::wgmma_fence();
      CK_UNROLL
      for (int j = 0; j < kSlices; ++j) {
        if constexpr (P == TensorCorePrecision::tf32) {
          dev::wgmma_m64n128k8_tf32(acc, v7_descriptor<P>(a_rows, j), v7_descriptor<P>(at + kOperand, j), true);
        } else {
          dev::wgmma_m64n128k16_bf16(acc, v7_descriptor<P>(a_rows, j), v7_descriptor<P>(at + kOperand, j), true);
        }
      }
      dev::wgmma_commit();
      dev::wgmma_fence_operands<kAccumulators>(acc);
      dev::wgmma_wait<1>();  // this warpgroup's wgmma of t - 1 are done
      __syncthreads();       // ... and every warpgroup's: the other stage is free
      if (t + 1 < stages) {
        a_stage.store(slot(t + 1));
        b_stage.store(slot(t + 1) + kOperand);
        dev::fence_proxy_async();
      }
      if (t + 2 < stages) {
        a_stage.load(a, p.lda, m0, p.M, (t + 2) * kStageK, p.K);
        b_stage.load(bm, p.ldb, n0, p.N, (t + 2) * kStageK, p.K);
      }
      __syncthreads();  // stage t + 1 is whole
    }
    dev::wgmma_wait<0>();
    dev::wgmma_fence_operands<kAccumulators>(acc);
    __syncthreads();  // every warpgroup is done with the stages before the next batch refills them
    store_warpgroup_tile(p, p.c + b * p.stride_c, m0, n0, acc);
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

constexpr std::int64_t kMaxGridY = 65535;
constexpr std::int64_t kMaxGridX = std::numeric_limits<int>::max();
constexpr int kVersions = 7;
constexpr int kWideTilesVersion = 3, kAsyncPipelineVersion = 4, kWgmmaVersion = 6, kWgmmaStagedVersion = 7;
static_assert(kWgmmaStagedVersion == kVersions, "launch_with's last branch runs the last version");

std::int64_t tile_m(int version) { return version == 1 ? kV1TileM : version == 2 ? v2::kTile : v3::kTile; }
std::int64_t tile_n(int version) { return version == 1 ? kV1TileN : version == 2 ? v2::kTile : v3::kTile; }
static_assert(v3::kTile == v4::kTile && v4::kTile == v6::kTile && v6::kTile == v7::kTile,
              "v3, v4, v6 and v7 share a tile size");

template <TensorCorePrecision P>
void launch_with(const GemmArgs& g, int version) {
  const std::int64_t tm = tile_m(version), tn = tile_n(version);
  const TcOperands ops{static_cast<const float*>(g.a), static_cast<const float*>(g.b), static_cast<float*>(g.c),
                       g.M, g.N, g.K, g.batch, g.lda, g.ldb, g.ldc, g.stride_a, g.stride_b, g.stride_c,
                       static_cast<float>(g.alpha), static_cast<float>(g.beta), ceil_div(g.N, tn)};
  const dim3 grid(static_cast<unsigned>(ceil_div(g.M, tm) * ceil_div(g.N, tn)),
                  static_cast<unsigned>(std::min(g.batch, kMaxGridY)));
  // Whether every 16-byte chunk of both operands starts 16-byte aligned (v3, v4).
  const bool vec = dev::aligned16(g.a) && dev::aligned16(g.b) && g.lda % 4 == 0 && g.ldb % 4 == 0 &&
                   g.stride_a % 4 == 0 && g.stride_b % 4 == 0;
  // Whether every chunk is whole or wholly outside (v5).
  const bool whole = vec && g.M % 4 == 0 && g.N % 4 == 0 && g.K % 4 == 0;
  with_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    constexpr bool TA = decltype(ta)::value, TB = decltype(tb)::value;
    if (version == 1) {
      launch(gemm_tc_v1_warp_per_tile<P, TA, TB>, grid, dim3(32), 0, nullptr, ops);
    } else if (version == 2) {
      launch(gemm_tc_v2_warp_tiled<P, TA, TB>, grid, dim3(v2::kThreads), 0, nullptr, ops);
    } else if (version == 3) {
      launch(gemm_tc_v3_wide_tiles<P, TA, TB>, grid, dim3(v3::kThreads), 0, nullptr, ops, vec);
    } else if (version == kWgmmaStagedVersion) {
      constexpr std::size_t bytes = v7::kSharedBytes<P>;
      const auto run = [&](auto kernel) {
        allow_dynamic_shared(kernel, bytes);
        launch(kernel, grid, dim3(v7::kThreads), bytes, nullptr, ops);
      };
      if (vec) run(gemm_tc_v7_wgmma_staged<P, TA, TB, true>);
      else run(gemm_tc_v7_wgmma_staged<P, TA, TB, false>);
    } else if (version == kWgmmaVersion) {
      if constexpr (P == TensorCorePrecision::tf32 && !TA && TB) {
        const auto run = [&](auto kernel) {
          allow_dynamic_shared(kernel, v6::kSharedBytes);
          launch(kernel, grid, dim3(v6::kThreads), v6::kSharedBytes, nullptr, ops);
        };
        if (whole) run(gemm_tc_v6_wgmma<ChunkCopy::whole>);
        else if (vec) run(gemm_tc_v6_wgmma<ChunkCopy::sized>);
        else run(gemm_tc_v6_wgmma<ChunkCopy::four_bytes>);
      }
    } else {
      constexpr std::size_t bytes = v4_shared_bytes<P, TA, TB>();
      const auto run = [&](auto kernel) {
        allow_dynamic_shared(kernel, bytes);
        launch(kernel, grid, dim3(v4::kThreads), bytes, nullptr, ops);
      };
      if (version == kAsyncPipelineVersion) {
        if (vec) run(gemm_tc_v4_async_pipeline<P, TA, TB, ChunkCopy::sized>);
        else run(gemm_tc_v4_async_pipeline<P, TA, TB, ChunkCopy::four_bytes>);
      } else if (whole) {
        run(gemm_tc_v5_rounded_stages<P, TA, TB, ChunkCopy::whole>);
      } else if (vec) {
        run(gemm_tc_v5_rounded_stages<P, TA, TB, ChunkCopy::sized>);
      } else {
        run(gemm_tc_v5_rounded_stages<P, TA, TB, ChunkCopy::four_bytes>);
      }
    }
  });
}

}  // namespace

const char* precision_name(TensorCorePrecision p) { return p == TensorCorePrecision::tf32 ? "tf32" : "bf16"; }

void register_gemm_tensor_core_family() {
  static const bool registered = [] {
    register_kernel_family(
        {"gemm_tensor_core", kVersions, kAsyncPipelineVersion,
         "v1 warp per tile: one warp per 16x8 tile of C, mma.sync on fragments read from global memory\n"
         "v2 warp tiled: 64x64 block tile, 4 warps of 32x32, tf32/bf16 words staged in padded shared memory, "
         "register-staged double buffer (16 flop/B)\n"
         "v3 wide tiles: 128x128 block tile, 8 warps of 64x32, 16-word stages, 16-byte staging loads, "
         "each operand in its global orientation (32 flop/B)\n"
         "v4 async pipeline: 128x128 block tile, 4 warps of 64x64, a 3-stage cp.async pipeline of 32-element k "
         "stages, float32 in shared memory converted at the fragment read\n"
         "v5 rounded stages: v4 with tf32 stages rounded once as they land (fragment reads without conversion) "
         "and whole-or-nothing 16-byte copies (the ignore-src predicate) where M, N and K are multiples of 4\n"
         "v6 wgmma: 128x128 block tile of two warpgroups, each one m64n128k8 wgmma per 8 of k from 128-byte "
         "swizzled cp.async stages; tf32 with A and B k-contiguous (C = A B^T), on sm_90a and sim\n"
         "v7 wgmma staged: v6's tile and products, stages loaded into registers, converted (tf32 or bf16) and "
         "stored K-major (transposed where an operand is not k-contiguous), one stage in registers and two in "
         "shared memory; every transpose pair, on sm_90a and sim"});
    return true;
  }();
  (void)registered;
}

std::string gemm_tensor_core_cannot_implement(TensorCorePrecision precision, DType dtype, const GemmArgs& g,
                                              int version) {
  if (version < 1 || version > kVersions)
    return detail::concat("gemm_tensor_core has versions 1..", kVersions, ", not ", version);
  if (dtype != DType::float32)
    return detail::concat("dtype ", dtype, " is not supported: tensor-core GEMM takes float32 (rounded to tf32 or "
                          "bf16 inside)");
  // The rest of the contract (sizes, overlap, null pointers) is gemm's.
  std::string why = gemm_cannot_implement(dtype, g, 1);
  if (!why.empty() || g.M == 0 || g.N == 0 || g.batch == 0) return why;
  if (ceil_div(g.M, tile_m(version)) * ceil_div(g.N, tile_n(version)) > kMaxGridX)
    return detail::concat("C of ", g.M, " x ", g.N, " has more tiles than a grid holds (", kMaxGridX, ")");
  if (version == kWgmmaStagedVersion) {
    if (!device_runs_wgmma())
      return detail::concat("version 7 runs wgmma: ", why_no_wgmma());
    if (v7::kSharedBytes<TensorCorePrecision::tf32> > max_dynamic_shared_bytes())
      return detail::concat("version 7 needs ", v7::kSharedBytes<TensorCorePrecision::tf32>,
                            " bytes of shared memory per block; this device offers ", max_dynamic_shared_bytes());
  } else if (version == kWgmmaVersion) {
    if (precision != TensorCorePrecision::tf32)
      return "version 6 multiplies tf32 only (bf16 wgmma would need bf16 stages; cp.async copies float32)";
    if (g.trans_a || !g.trans_b)
      return "version 6 needs op(A) and op(B) k-contiguous (A not transposed, B transposed): tf32 wgmma reads "
             "K-major operands only";
    if (!device_runs_wgmma())
      return detail::concat("version 6 runs wgmma: ", why_no_wgmma());
    if (v6::kSharedBytes > max_dynamic_shared_bytes())
      return detail::concat("version 6 needs ", v6::kSharedBytes, " bytes of shared memory per block; this device "
                            "offers ", max_dynamic_shared_bytes());
  } else if (version >= kAsyncPipelineVersion) {
    const std::size_t bytes = v4_largest_shared_bytes(g.trans_a, g.trans_b), offered = max_dynamic_shared_bytes();
    if (bytes > offered)
      return detail::concat("version ", version, " needs ", bytes,
                            " bytes of shared memory per block; this device offers ", offered,
                            " (sm_86 and sm_89 offer 99 KB: take version 2 or 3 there)");
  }
  return {};
}

void launch_gemm_tensor_core(TensorCorePrecision precision, DType dtype, const GemmArgs& args) {
  register_gemm_tensor_core_family();
  int version = kernel_version("gemm_tensor_core");
  if (version == kAsyncPipelineVersion && !kernel_version_pinned("gemm_tensor_core") &&
      !gemm_tensor_core_cannot_implement(precision, dtype, args, version).empty())
    version = kWideTilesVersion;
  launch_gemm_tensor_core(precision, dtype, args, version);
}

void launch_gemm_tensor_core(TensorCorePrecision precision, DType dtype, const GemmArgs& g, int version) {
  register_gemm_tensor_core_family();
  const std::string why = gemm_tensor_core_cannot_implement(precision, dtype, g, version);
  CK_CHECK(why.empty(), "gemm_tensor_core v", version, " (", precision_name(precision), ", ", dtype, ", M=", g.M,
           " N=", g.N, " K=", g.K, " batch=", g.batch, g.trans_a ? ", A transposed" : "",
           g.trans_b ? ", B transposed" : "", "): ", why);
  if (g.M == 0 || g.N == 0 || g.batch == 0) return;
  // K = 0 has no product: C = beta C. A and B then hold no memory and may be
  // null, where the pipelined versions' copiers form their first addresses
  // up front (an offset from a null pointer, undefined behaviour that clang's
  // UBSan reports); version 1 forms its addresses in the k loop, which does
  // not run, and its epilogue is every version's.
  const int run_version = g.K == 0 ? 1 : version;
  if (precision == TensorCorePrecision::tf32) {
    launch_with<TensorCorePrecision::tf32>(g, run_version);
  } else {
    launch_with<TensorCorePrecision::bf16>(g, run_version);
  }
}

}  // namespace convkit::CK_GPU_NS
