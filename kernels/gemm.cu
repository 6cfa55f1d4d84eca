// GEMM: C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b] (see gemm.cuh for
// the layout contract): versions 1-3 here, the warp-tiled versions 4-7 in
// gemm_warp_tiled.cu, and cuBLAS (v8) here.
//
// The floor. One product does 2*M*N*K flops and must move at least
// (M*K + K*N + M*N) elements, plus M*N more when beta != 0 (C is read). For
// large square sizes that is ~n/6 flop per element, far above any GPU's
// ridge point (an H100 does ~60 fp32 TFLOP/s against ~3 TB/s: ~20 flop/B), so
// GEMM is compute-bound in principle. Whether a kernel gets there depends on
// how often it re-reads each element: the "arithmetic intensity" quoted for
// each version is flops per byte that the kernel pulls from global memory
// (L2 or DRAM), which is what each version improves.
//
// Block to tile mapping (every version): C is cut into tiles; blockIdx.x
// numbers the tiles row-major (tile / n_tiles is the tile row), so
// consecutive blocks share a row panel of A, which then stays in L2;
// blockIdx.y loops over the batch. Threads outside C still run the loads and
// barriers of tiled versions and just skip the store.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "convkit/backend/kernel_versions.h"
#include "kernels/device_math.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/gemm.cuh"
#include "kernels/gemm_warp_tiled.cuh"
#include "kernels/vector_access.cuh"

#if defined(__CUDACC__)
#include <cublas_v2.h>
#endif

namespace convkit::CK_GPU_NS {

namespace {

// The typed arguments every kernel receives by value.
template <typename T>
struct Operands {
  const T* a;
  const T* b;
  T* c;
  std::int64_t M, N, K, batch;
  std::int64_t lda, ldb, ldc;
  std::int64_t stride_a, stride_b, stride_c;
  T alpha, beta;
  std::int64_t n_tiles;  // tiles along N, to decode blockIdx.x
};

// op(X)(row, col) of a row-major operand stored as is or transposed.
template <bool Trans, typename T>
__device__ __forceinline__ T element(const T* x, std::int64_t ld, std::int64_t row, std::int64_t col) {
  return Trans ? x[col * ld + row] : x[row * ld + col];
}

// alpha * acc + beta * c, without reading c when beta == 0 (c may be NaN).
template <typename T>
__device__ __forceinline__ T scaled(T acc, T alpha, T beta, const T* c) {
  return beta == T(0) ? alpha * acc : alpha * acc + beta * *c;
}

// ---------------------------------------------------------------------------
// v1, naive: one thread per element of C, a 16x16 block of threads per 16x16
// tile. Each thread reads a row of op(A) and a column of op(B) straight from
// global memory: 2 loads per multiply-add, 2 flops per 2*sizeof(T) bytes =
// 0.25 flop/B (float), 0.125 (double). Caches catch much of the reuse, but the
// kernel is bound by load instructions, not arithmetic. Obviously right: the
// reference the other versions are tested against.
constexpr int kV1Tile = 16;

template <typename T, bool TA, bool TB>
__global__ void __launch_bounds__(kV1Tile* kV1Tile) gemm_v1_naive(Operands<T> p) {
  const std::int64_t m = (blockIdx.x / p.n_tiles) * kV1Tile + threadIdx.y;
  const std::int64_t n = (blockIdx.x % p.n_tiles) * kV1Tile + threadIdx.x;
  if (m >= p.M || n >= p.N) return;
  for (std::int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
    const T* a = p.a + b * p.stride_a;
    const T* bm = p.b + b * p.stride_b;
    T* c = p.c + b * p.stride_c + m * p.ldc + n;
    T acc = 0;
    for (std::int64_t k = 0; k < p.K; ++k) acc = dev::fma(element<TA>(a, p.lda, m, k), element<TB>(bm, p.ldb, k, n), acc);
    *c = scaled(acc, p.alpha, p.beta, c);
  }
}

// ---------------------------------------------------------------------------
// v2, shared-memory tiles: the block stages a 16x16 tile of op(A) and of op(B)
// in shared memory, then each thread runs 16 multiply-adds out of it. Every
// element fetched from global memory is used 16 times: per K-step the block
// loads 2*16*16 elements for 2*16^3 flops, 16 flops per element = 4 flop/B
// (float), 2 flop/B (double). Loads are coalesced whatever the transposes:
// consecutive threadIdx.x always walk the operand's contiguous dimension, and
// a transposed operand is written into shared memory transposed (the +1 pad
// keeps those column writes free of bank conflicts). The inner loop reads
// As[ty][k] (one address per half-warp: a broadcast) and Bs[k][tx]
// (consecutive words): still two shared loads per multiply-add, which is what
// v3 fixes.
constexpr int kV2Tile = 16;

template <typename T, bool TA, bool TB>
__global__ void __launch_bounds__(kV2Tile* kV2Tile) gemm_v2_shared(Operands<T> p) {
  __shared__ SharedArray<T[kV2Tile][kV2Tile + 1]> As;  // As[m][k]
  __shared__ SharedArray<T[kV2Tile][kV2Tile + 1]> Bs;  // Bs[k][n]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t m0 = (blockIdx.x / p.n_tiles) * kV2Tile;
  const std::int64_t n0 = (blockIdx.x % p.n_tiles) * kV2Tile;
  for (std::int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
    const T* a = p.a + b * p.stride_a;
    const T* bm = p.b + b * p.stride_b;
    T acc = 0;
    for (std::int64_t k0 = 0; k0 < p.K; k0 += kV2Tile) {
      if (!TA) {  // a[m * lda + k]: tx walks k
        const std::int64_t m = m0 + ty, k = k0 + tx;
        As[ty][tx] = (m < p.M && k < p.K) ? a[m * p.lda + k] : T(0);
      } else {  // a[k * lda + m]: tx walks m
        const std::int64_t m = m0 + tx, k = k0 + ty;
        As[tx][ty] = (m < p.M && k < p.K) ? a[k * p.lda + m] : T(0);
      }
      if (!TB) {  // b[k * ldb + n]: tx walks n
        const std::int64_t k = k0 + ty, n = n0 + tx;
        Bs[ty][tx] = (k < p.K && n < p.N) ? bm[k * p.ldb + n] : T(0);
      } else {  // b[n * ldb + k]: tx walks k
        const std::int64_t k = k0 + tx, n = n0 + ty;
        Bs[tx][ty] = (k < p.K && n < p.N) ? bm[n * p.ldb + k] : T(0);
      }
      __syncthreads();
      CK_UNROLL
      for (int k = 0; k < kV2Tile; ++k) acc = dev::fma(As[ty][k], Bs[k][tx], acc);
      __syncthreads();  // before the next tile overwrites As/Bs
    }
    const std::int64_t m = m0 + ty, n = n0 + tx;
    if (m < p.M && n < p.N) {
      T* c = p.c + b * p.stride_c + m * p.ldc + n;
      *c = scaled(acc, p.alpha, p.beta, c);
    }
  }
}

// ---------------------------------------------------------------------------
// v3, register blocking: a 128x128 tile of C per block of 256 threads, each
// thread computing an 8x8 sub-tile held in registers, K consumed 8 at a time.
//   Global: per K-step the block loads (128 + 128) * 8 elements for
//     2*128*128*8 flops: 128 flops per element = 32 flop/B (float), 16 flop/B
//     (double), above the ridge point, so DRAM is no longer the limit.
//   Shared: per k each thread reads 8 values of op(A) and 8 of op(B) (four
//     16-byte loads for float) and does 64 multiply-adds: 4 per value read
//     instead of v2's 0.5. That ratio is what lets the FMA units, not the
//     shared-memory pipe, set the pace.
//   Layout: op(A)'s tile is stored k-major (As[k][m]) like op(B)'s (Bs[k][n]),
//     so a thread's 8 values along m (or n) are contiguous and read as vectors.
//     A thread owns rows {g*16*V + ty*V + j} (g < 8/V, j < V) rather than 8
//     consecutive rows: then a quarter-warp's 16-byte reads cover 128
//     consecutive bytes, which is free of bank conflicts.
//   Vector loads: when every pointer is 16-byte aligned and every leading
//     dimension and batch stride is a multiple of V (4 floats or 2 doubles),
//     runs of V elements along the stored contiguous dimension move as one
//     16-byte load (float4/double2), and C is read/written the same way.
//     Otherwise (or at a ragged edge) the same kernel loads scalars; the
//     launcher decides once (gemm_vector_loads) and passes the answer down.
//   Transposed stores into shared memory (op(A) stored row-major, op(B)
//     stored transposed) use a pad of 4 elements per row, which keeps the
//     rows 16-byte aligned and makes the two runs of a row-pair land in
//     different banks.
namespace v3 {
constexpr int kTileM = 128, kTileN = 128, kTileK = 8;
constexpr int kThreadM = 8, kThreadN = 8;
constexpr int kThreadsAlongM = kTileM / kThreadM;  // 16
constexpr int kThreadsAlongN = kTileN / kThreadN;  // 16
constexpr int kThreads = kThreadsAlongM * kThreadsAlongN;
constexpr int kPad = 4;
static_assert(kThreadsAlongM == 16 && kThreadsAlongN == 16, "fragment_offset assumes 16 threads per side");
}  // namespace v3

template <typename T>
struct Vec16;  // the 16-byte vector type of T
template <>
struct Vec16<float> {
  static constexpr int width = 4;
};
template <>
struct Vec16<double> {
  static constexpr int width = 2;
};

__device__ __forceinline__ void load_vec(const float* p, float* r) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
}
__device__ __forceinline__ void load_vec(const double* p, double* r) {
  const double2 v = *reinterpret_cast<const double2*>(p);
  r[0] = v.x, r[1] = v.y;
}
__device__ __forceinline__ void store_vec(float* p, const float* r) {
  *reinterpret_cast<float4*>(p) = make_float4(r[0], r[1], r[2], r[3]);
}
__device__ __forceinline__ void store_vec(double* p, const double* r) {
  *reinterpret_cast<double2*>(p) = make_double2(r[0], r[1]);
}

// Offset within the tile of a thread's i-th value along one side, for the
// thread at position `lane` (0..15) along that side.
template <int V>
__device__ __forceinline__ int fragment_offset(int lane, int i) {
  return (i / V) * (16 * V) + lane * V + i % V;
}

// V consecutive elements p[0..V) whose first has index `first` along a
// dimension of extent `limit`; zeros past the edge or when !row_ok.
template <typename T>
__device__ __forceinline__ void load_run(const T* p, bool row_ok, std::int64_t first, std::int64_t limit,
                                         bool vec, T* r) {
  constexpr int V = Vec16<T>::width;
  if (vec && row_ok && first + V <= limit) {
    load_vec(p, r);
    return;
  }
  CK_UNROLL
  for (int j = 0; j < V; ++j) r[j] = (row_ok && first + j < limit) ? p[j] : T(0);
}

// A thread's share of staging one kTileK x X tile S[k][x] of an operand
// whose element (x, k) is at p[k * ld + x] (KMajor: runs of V go along x and
// are stored as they are) or at p[x * ld + k] (runs go along k and are
// transposed on the way into shared memory). x is m for op(A), n for op(B).
// The thread's runs sit at fixed places in every tile, so their address is
// computed once and advanced by one K-step per tile.
template <typename T, bool KMajor, int X>
struct TileLoader {
  static constexpr int V = Vec16<T>::width;
  static constexpr int kRunsPerLine = KMajor ? X / V : v3::kTileK / V;
  static constexpr int kLinesPerPass = v3::kThreads / kRunsPerLine;
  static constexpr int kPasses = (KMajor ? v3::kTileK : X) / kLinesPerPass;
  static_assert(kPasses * kLinesPerPass == (KMajor ? v3::kTileK : X), "threads must tile the tile exactly");

  // Only what differs per thread lives here; ld and the extents are kernel
  // parameters (constant memory), passed in rather than copied to registers.
  const T* p;        // the thread's first run in the current tile
  std::int64_t x, k;  // op(X) indices of the first run's first element
  int line, pos;      // the first run's line (k or x) and position along it in S

  __device__ __forceinline__ TileLoader(const T* base, std::int64_t ld, std::int64_t x0) {
    line = threadIdx.x / kRunsPerLine;
    pos = (threadIdx.x % kRunsPerLine) * V;
    x = x0 + (KMajor ? pos : line);
    k = KMajor ? line : pos;
    p = base + (KMajor ? k * ld + x : x * ld + k);
  }

  __device__ __forceinline__ void load(std::int64_t ld, std::int64_t x_limit, std::int64_t K, bool vec,
                                       T (*S)[X + v3::kPad]) const {
    CK_UNROLL
    for (int r = 0; r < kPasses; ++r) {
      T run[V];
      if constexpr (KMajor) {
        load_run(p + r * kLinesPerPass * ld, k + r * kLinesPerPass < K, x, x_limit, vec, run);
        store_vec(&S[line + r * kLinesPerPass][pos], run);
      } else {
        load_run(p + r * kLinesPerPass * ld, x + r * kLinesPerPass < x_limit, k, K, vec, run);
        CK_UNROLL
        for (int j = 0; j < V; ++j) S[pos + j][line + r * kLinesPerPass] = run[j];
      }
    }
  }

  __device__ __forceinline__ void next(std::int64_t ld) {
    p += KMajor ? v3::kTileK * ld : v3::kTileK;
    k += v3::kTileK;
  }
};

template <typename T, bool TA, bool TB>
__global__ void __launch_bounds__(v3::kThreads) gemm_v3_register_blocked(Operands<T> p, bool vec) {
  using namespace v3;
  constexpr int V = Vec16<T>::width;
  __shared__ __align__(16) SharedArray<T[kTileK][kTileM + kPad]> As;  // As[k][m]
  __shared__ __align__(16) SharedArray<T[kTileK][kTileN + kPad]> Bs;  // Bs[k][n]
  const int tx = threadIdx.x % kThreadsAlongN;
  const int ty = threadIdx.x / kThreadsAlongN;
  const std::int64_t m0 = (blockIdx.x / p.n_tiles) * kTileM;
  const std::int64_t n0 = (blockIdx.x % p.n_tiles) * kTileN;
  // A thread whose first row (or column) is past the edge has all of them
  // past it: it still stages tiles and meets the barriers, but skips the
  // arithmetic. When M or N is far below 128 (a conv layer with 16 output
  // channels has M = 16) that idles most warps instead of multiplying zeros.
  const bool live = m0 + ty * V < p.M && n0 + tx * V < p.N;
  for (std::int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
    const T* a = p.a + b * p.stride_a;
    const T* bm = p.b + b * p.stride_b;
    T acc[kThreadM][kThreadN] = {};
    TileLoader<T, TA, kTileM> a_loader(a, p.lda, m0);
    TileLoader<T, !TB, kTileN> b_loader(bm, p.ldb, n0);
    for (std::int64_t k0 = 0; k0 < p.K; k0 += kTileK) {
      a_loader.load(p.lda, p.M, p.K, vec, As);
      b_loader.load(p.ldb, p.N, p.K, vec, Bs);
      a_loader.next(p.lda);
      b_loader.next(p.ldb);
      __syncthreads();
      if (live) {
        CK_UNROLL
        for (int k = 0; k < kTileK; ++k) {
          T af[kThreadM], bf[kThreadN];
          CK_UNROLL
          for (int g = 0; g < kThreadM / V; ++g) load_vec(&As[k][g * 16 * V + ty * V], af + g * V);
          CK_UNROLL
          for (int g = 0; g < kThreadN / V; ++g) load_vec(&Bs[k][g * 16 * V + tx * V], bf + g * V);
          CK_UNROLL
          for (int i = 0; i < kThreadM; ++i)
            CK_UNROLL
            for (int j = 0; j < kThreadN; ++j) acc[i][j] = dev::fma(af[i], bf[j], acc[i][j]);
        }
      }
      __syncthreads();  // before the next K-step overwrites As/Bs
    }
    T* c = p.c + b * p.stride_c;
    CK_UNROLL
    for (int i = 0; i < kThreadM; ++i) {
      const std::int64_t m = m0 + fragment_offset<V>(ty, i);
      if (m >= p.M) continue;
      CK_UNROLL
      for (int g = 0; g < kThreadN / V; ++g) {
        const std::int64_t n = n0 + g * 16 * V + tx * V;
        T* cp = c + m * p.ldc + n;
        T out[V];
        CK_UNROLL
        for (int j = 0; j < V; ++j) out[j] = p.alpha * acc[i][g * V + j];
        if (vec && n + V <= p.N) {
          if (p.beta != T(0)) {
            T old[V];
            load_vec(cp, old);
            CK_UNROLL
            for (int j = 0; j < V; ++j) out[j] += p.beta * old[j];
          }
          store_vec(cp, out);
        } else {
          CK_UNROLL
          for (int j = 0; j < V; ++j)
            if (n + j < p.N) cp[j] = p.beta == T(0) ? out[j] : out[j] + p.beta * cp[j];
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// v8, cuBLAS (nvcc only): the vendor's tuned kernels, as the yardstick for v3.
// cuBLAS is column-major; a row-major X is the column-major X^T, so row-major
// C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: pass B first, A
// second, swap M and N, keep each operand's transpose flag.
#if defined(__CUDACC__)
cublasHandle_t cublas_handle() {
  // Created on first use and never destroyed: destroying it from a static
  // destructor can run after the CUDA runtime has shut down.
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    const cublasStatus_t s = cublasCreate(&h);
    CK_CHECK(s == CUBLAS_STATUS_SUCCESS, "gemm v8: cublasCreate failed: ", cublasGetStatusString(s));
    return h;
  }();
  return handle;
}

void run_cublas(DType dtype, const GemmArgs& g) {
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int M = static_cast<int>(g.M), N = static_cast<int>(g.N), K = static_cast<int>(g.K);
  const int lda = static_cast<int>(g.lda), ldb = static_cast<int>(g.ldb), ldc = static_cast<int>(g.ldc);
  const int batch = static_cast<int>(g.batch);
  cublasStatus_t s;
  if (dtype == DType::float32) {
    const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
    s = cublasSgemmStridedBatched(cublas_handle(), op_b, op_a, N, M, K, &alpha, static_cast<const float*>(g.b), ldb,
                                  g.stride_b, static_cast<const float*>(g.a), lda, g.stride_a, &beta,
                                  static_cast<float*>(g.c), ldc, g.stride_c, batch);
  } else {
    const double alpha = g.alpha, beta = g.beta;
    s = cublasDgemmStridedBatched(cublas_handle(), op_b, op_a, N, M, K, &alpha, static_cast<const double*>(g.b),
                                  ldb, g.stride_b, static_cast<const double*>(g.a), lda, g.stride_a, &beta,
                                  static_cast<double*>(g.c), ldc, g.stride_c, batch);
  }
  CK_CHECK(s == CUBLAS_STATUS_SUCCESS, "gemm v8: cuBLAS ", dtype == DType::float32 ? "S" : "D",
           "gemmStridedBatched failed: ", cublasGetStatusString(s));
}
#endif

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int tile_of(int version) { return version == 3 ? v3::kTileM : version == 2 ? kV2Tile : kV1Tile; }

constexpr std::int64_t kMaxGridY = 65535;
constexpr std::int64_t kMaxGridX = std::numeric_limits<int>::max();

template <typename T>
Operands<T> operands(const GemmArgs& g, std::int64_t tile) {
  return {static_cast<const T*>(g.a), static_cast<const T*>(g.b), static_cast<T*>(g.c), g.M, g.N, g.K, g.batch,
          g.lda, g.ldb, g.ldc, g.stride_a, g.stride_b, g.stride_c, static_cast<T>(g.alpha), static_cast<T>(g.beta),
          ceil_div(g.N, tile)};
}

}  // namespace

void register_gemm_family() {
  static const bool registered = [] {
    register_kernel_family(
        {"gemm", kGemmCublasVersion, kGemmDefaultVersion,
         "v1 naive: one thread per C element, operands from global memory (0.25 flop/B fp32)\n"
         "v2 shared memory: 16x16 tiles staged in shared memory (4 flop/B fp32)\n"
         "v3 register blocked: 128x128x8 block tile, 8x8 per thread, 16-byte vector loads when aligned "
         "(32 flop/B fp32)\n"
         "v4 warp tiled: 128x128x8 block, 64x32 warp, 8x8 thread tiles, conflict-free shared stores, "
         "<= 128 registers\n"
         "v5 cp.async pipeline: v4's tiles in 3 shared stages filled by cp.async\n"
         "v6 per-shape tiles: v5 with a 128x128, 128x64, 64x64 or 64x32 block tile chosen by the shape\n"
         "v7 split-K: v6, K split over blocks when the tiles leave SMs idle, fixed-order reduction\n"
         "v8 wide thread tiles: v7 with the 128x128 tile in 4 warps of 64x64, 8x16 accumulators per thread "
         "(float; double runs v7)\n"
         "v9 cuBLAS strided-batched SGEMM/DGEMM (cuda backend only)"});
    return true;
  }();
  (void)registered;
}

std::string gemm_cannot_implement(DType dtype, const GemmArgs& g, int version) {
  std::string why;
  auto fail = [&](auto&&... parts) {
    if (why.empty()) why = detail::concat(parts...);
  };
  static_assert(kGemmWideThreadTileVersion + 1 == kGemmCublasVersion, "cuBLAS is the last version");
  if (version < 1 || version > kGemmCublasVersion) fail("gemm has versions 1..", kGemmCublasVersion, ", not ", version);
  if (!is_floating(dtype)) fail("dtype ", dtype, " is not supported (float32 or float64)");
  if (g.M < 0 || g.N < 0 || g.K < 0 || g.batch < 0)
    fail("negative size M=", g.M, " N=", g.N, " K=", g.K, " batch=", g.batch);
  if (g.lda < 0 || g.ldb < 0 || g.ldc < 0 || g.stride_a < 0 || g.stride_b < 0 || g.stride_c < 0)
    fail("negative leading dimension or batch stride (lda=", g.lda, " ldb=", g.ldb, " ldc=", g.ldc,
         " strides ", g.stride_a, "/", g.stride_b, "/", g.stride_c, ")");
  if (!why.empty()) return why;
  if (g.M == 0 || g.N == 0 || g.batch == 0) return {};  // nothing to write
  if (g.c == nullptr || (g.K > 0 && (g.a == nullptr || g.b == nullptr))) fail("null operand pointer");
  // Rows or batches of C that overlap would be written by two threads at once.
  if (g.M > 1 && g.ldc < g.N) fail("ldc=", g.ldc, " is less than N=", g.N, ": rows of C overlap");
  if (g.batch > 1 && g.stride_c < (g.M - 1) * g.ldc + g.N)
    fail("stride_c=", g.stride_c, " makes the ", g.batch, " matrices of C overlap (each spans ",
         (g.M - 1) * g.ldc + g.N, " elements)");
  if (version == kGemmCublasVersion) {
#if defined(__CUDACC__)
    constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
    if (g.M > kIntMax || g.N > kIntMax || g.K > kIntMax || g.batch > kIntMax || g.lda > kIntMax ||
        g.ldb > kIntMax || g.ldc > kIntMax)
      fail("cuBLAS takes 32-bit sizes and leading dimensions");
    // cuBLAS's column-major rule ld >= rows, in row-major words.
    const std::int64_t min_lda = std::max<std::int64_t>(1, g.trans_a ? g.M : g.K);
    const std::int64_t min_ldb = std::max<std::int64_t>(1, g.trans_b ? g.K : g.N);
    if (g.lda < min_lda) fail("cuBLAS needs lda >= ", min_lda, ", got ", g.lda);
    if (g.ldb < min_ldb) fail("cuBLAS needs ldb >= ", min_ldb, ", got ", g.ldb);
    if (g.ldc < g.N) fail("cuBLAS needs ldc >= ", g.N, ", got ", g.ldc);
#else
    fail("cuBLAS exists only on the cuda backend (gemm version ", kGemmCublasVersion,
         "); the sim backend runs versions 1..", kGemmCublasVersion - 1);
#endif
    return why;
  }
  if (version >= kGemmWarpTiledVersion) {
    fail(gemm_warp_tiled_cannot_implement(g, version));
    return why;
  }
  const std::int64_t tile = tile_of(version);
  if (ceil_div(g.M, tile) * ceil_div(g.N, tile) > kMaxGridX)
    fail("C of ", g.M, " x ", g.N, " has more ", tile, "x", tile, " tiles than a grid holds (", kMaxGridX, ")");
  return why;
}

std::string gemm_describe(DType dtype, const GemmArgs& g, int version) {
  switch (version) {
    case 1: return "v1 naive: 16x16 threads per 16x16 tile";
    case 2: return "v2 shared tiles: 16x16x16";
    case 3: return gemm_vector_loads(dtype, g) ? "v3 register blocked: 128x128x8, 16-byte vector loads"
                                                : "v3 register blocked: 128x128x8, scalar loads";
    case kGemmCublasVersion: return "v9 cuBLAS";
    default: break;
  }
  if (version >= kGemmWarpTiledVersion && version <= kGemmWideThreadTileVersion)
    return detail::concat("v", version, ": ", gemm_warp_tiled_describe(dtype, g, version));
  return detail::concat("gemm has no version ", version);
}

bool gemm_vector_loads(DType dtype, const GemmArgs& g) {
  const std::int64_t v = dtype == DType::float64 ? Vec16<double>::width : Vec16<float>::width;
  return dev::aligned16(g.a) && dev::aligned16(g.b) && dev::aligned16(g.c) && g.lda % v == 0 && g.ldb % v == 0 &&
         g.ldc % v == 0 && g.stride_a % v == 0 && g.stride_b % v == 0 && g.stride_c % v == 0;
}

void launch_gemm(DType dtype, const GemmArgs& args) {
  register_gemm_family();
  launch_gemm(dtype, args, kernel_version("gemm"));
}

void launch_gemm(DType dtype, const GemmArgs& g, int version) {
  register_gemm_family();
  const std::string why = gemm_cannot_implement(dtype, g, version);
  CK_CHECK(why.empty(), "gemm v", version, " (", dtype, ", M=", g.M, " N=", g.N, " K=", g.K, " batch=", g.batch,
           g.trans_a ? ", A transposed" : "", g.trans_b ? ", B transposed" : "", "): ", why);
  if (g.M == 0 || g.N == 0 || g.batch == 0) return;
#if defined(__CUDACC__)
  if (version == kGemmCublasVersion) {
    run_cublas(dtype, g);
    return;
  }
#endif
  if (version >= kGemmWarpTiledVersion) {
    launch_gemm_warp_tiled(dtype, g, version);
    return;
  }
  const std::int64_t tile = tile_of(version);
  const dim3 grid(static_cast<unsigned>(ceil_div(g.M, tile) * ceil_div(g.N, tile)),
                  static_cast<unsigned>(std::min(g.batch, kMaxGridY)));
  const bool vec = gemm_vector_loads(dtype, g);
  dispatch_floating(dtype, "gemm", [&](auto t) {
    using T = decltype(t);
    const Operands<T> ops = operands<T>(g, tile);
    with_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
      constexpr bool TA = decltype(ta)::value, TB = decltype(tb)::value;
      switch (version) {
        case 1: launch(gemm_v1_naive<T, TA, TB>, grid, dim3(kV1Tile, kV1Tile), 0, nullptr, ops); break;
        case 2: launch(gemm_v2_shared<T, TA, TB>, grid, dim3(kV2Tile, kV2Tile), 0, nullptr, ops); break;
        default: launch(gemm_v3_register_blocked<T, TA, TB>, grid, dim3(v3::kThreads), 0, nullptr, ops, vec); break;
      }
    });
  });
}

}  // namespace convkit::CK_GPU_NS
