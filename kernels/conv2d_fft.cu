// FFT convolution kernels (docs/gpu/conv2d_fft.md; the maths is in
// docs/algorithms/fft.md): our own radix-2 Stockham FFT in shared memory, the
// row and column passes of 2-D real transforms of overlap-save tiles, the
// per-frequency channel sums as a batched complex GEMM, and the inverse with
// the crop into the output.
//
// A 2-D transform of a tile_h x tile_w real tile is two passes over global memory:
//   rows     each tile row (gathered straight from the image, zero padded) is
//            transformed and its tile_w/2 + 1 non-redundant bins are written to
//            the frequency-major spectra [f][x];
//   columns  each of those tile_w/2 + 1 columns is transformed in place.
// The inverse runs columns first, then rows, rebuilding each row's upper half
// from Hermitian symmetry, and crops (scale, bias) straight into the output.
// Both passes move every spectrum value once in and once out; blocks take
// consecutive signals x, so those accesses are contiguous runs (coalesced).
//
// Floors, for a pass over N images of `tiles` tiles of T = tile_h * tile_w,
// F = tile_h * (tile_w/2 + 1) frequencies, channels in I and out O (per group
// I/g, O/g):
//   transforms  ~2.5 T log2 T real flops per tile and channel (in + out)
//               and 2 * F complex values read and written per tile and channel
//   products    8 * F * (O/g) * I complex-multiply-add flops per tile: the
//               bulk for tens of channels, and the GEMM's flop floor; its byte
//               floor is the spectra, F * (I + O) * tiles complex values.
//
// Versions ("conv2d_fft"):
//   v1  each real row transformed as a complex signal with a zero imaginary
//       part; channel sums with one thread per output value (naive GEMM).
//   v2  two real rows packed into one complex FFT (z = a + ib, then
//       A = (Z + conj Z(-k)) / 2, B = (Z - conj Z(-k)) / 2i): half the row
//       transforms; channel sums as a shared-memory tiled complex GEMM
//       (32x32 outputs per block, or 16x16 for small products; 2x2 per
//       thread), so each spectrum value fetched from global memory serves 32
//       (16) products instead of one.
//   v3  cuFFT for the transforms (cuda backend only; tiles gathered into a
//       contiguous buffer, advanced layouts write [f][x] directly), v2's GEMM.
//   v4  each 2-D transform fused in one block: a block gathers 2p whole tiles,
//       transforms their rows (paired as in v2, tile with tile), turns the
//       half spectra into column signals in shared memory, transforms those
//       and writes the spectra once; the inverse mirrors it. Global memory
//       sees each spectrum value once per transform instead of v2's three
//       times (row pass out, column pass in and out), and a transform is one
//       launch instead of two. Tiles whose pair does not fit 48 KB of shared
//       memory (float32 above 2^11 values, float64 above 2^10) run v2's
//       passes. Channel sums on 4x4 register tiles of a 64x64 block tile
//       where the product is large enough to fill the GPU, else v2's tiles.
#include <algorithm>
#include <string>

#include "convkit/backend/kernel_versions.h"
#include "kernels/conv2d_fft.cuh"
#include "kernels/device_math.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/tensor_view.cuh"

#if defined(__CUDACC__)
#include <cufft.h>

#include <map>
#include <mutex>
#include <tuple>
#endif

namespace convkit::CK_GPU_NS {

namespace {

using std::int64_t;

constexpr int kFftThreads = 256;
// Shared memory for the two ping-pong buffers of a transform block, and the
// complex values a block aims to transform at once (enough butterflies for
// 256 threads per stage).
constexpr std::size_t kFftBufferBudget = 32 * 1024;
constexpr int kFftValuesPerBlock = 2048;
constexpr std::size_t kMaxSharedBytes = 48 * 1024;

// A complex value aligned to its size, so that nvcc moves it as one 8-byte
// (float) or 16-byte (double) access; aligned to T alone, it may take two.
// g++ splits even an aligned struct into its halves, so under sim a copy goes
// through a GCC vector type, as dev::load16 does: the sim profile then counts
// the requests nvcc issues (docs/sim.md, B/lane).
template <typename T>
struct alignas(2 * sizeof(T)) Cx {
  T re, im;
#if defined(CONVKIT_SIM_KERNEL)
  typedef T Whole __attribute__((vector_size(2 * sizeof(T))));
  Cx() = default;
  __host__ __device__ Cx(T r, T i) : re(r), im(i) {}
  __host__ __device__ Cx(const Cx& o) { *reinterpret_cast<Whole*>(this) = *reinterpret_cast<const Whole*>(&o); }
  __host__ __device__ Cx& operator=(const Cx& o) {
    *reinterpret_cast<Whole*>(this) = *reinterpret_cast<const Whole*>(&o);
    return *this;
  }
#endif
};
template <typename T>
__host__ __device__ __forceinline__ Cx<T> operator+(Cx<T> a, Cx<T> b) {
  return {a.re + b.re, a.im + b.im};
}
template <typename T>
__host__ __device__ __forceinline__ Cx<T> operator-(Cx<T> a, Cx<T> b) {
  return {a.re - b.re, a.im - b.im};
}
template <typename T>
__host__ __device__ __forceinline__ Cx<T> operator*(Cx<T> a, Cx<T> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
// acc += a * b. Four real multiply-adds, counted for the sim profile as such;
// the arithmetic stays as written, so sim's results do not move.
template <typename T>
__device__ __forceinline__ void mac(Cx<T>& acc, Cx<T> a, Cx<T> b) {
  dev::count_fmas(4);
  acc.re += a.re * b.re - a.im * b.im;
  acc.im += a.re * b.im + a.im * b.re;
}

__device__ __forceinline__ int64_t grid_start() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ============================== the FFT in shared memory ==============================

// sin(pi x) and cos(pi x). CUDA's sincospi reduces the argument exactly (no
// slow-path local memory, unlike sin/cos of a multiple of pi).
__device__ __forceinline__ void sincos_pi(double x, double* s, double* c) {
#if defined(__CUDACC__)
  ::sincospi(x, s, c);
#else
  constexpr double kPi = 3.14159265358979323846;
  *s = std::sin(kPi * x);
  *c = std::cos(kPi * x);
#endif
}

// tw[k] = exp(-2 pi i k / n) for k < n/2, computed in double and rounded to T,
// so the table is as accurate as T allows. Every thread of the block calls it.
template <typename T>
__device__ void load_twiddles(Cx<T>* tw, int n) {
  for (int k = static_cast<int>(threadIdx.x); k < n / 2; k += static_cast<int>(blockDim.x)) {
    double s, c;
    sincos_pi(-2.0 * k / n, &s, &c);
    tw[k] = {static_cast<T>(c), static_cast<T>(s)};
  }
}

// Radix-2 Stockham autosort FFT of `signals` signals of n = 2^log2n values,
// signal l at src + l * pitch, by every thread of the block. Stage t (stride
// s = 2^t, half-length m = n / 2^(t+1)) maps, for p < m and q < s,
//   y[q + 2sp]     = x[q + sp] + x[q + s(p + m)]
//   y[q + 2sp + s] = (x[q + sp] - x[q + s(p + m)]) * exp(-+2 pi i p s / n)
// ping-ponging between src and dst; the result is in natural order (no
// bit reversal) in the returned buffer. Each stage is one sweep of n/2
// butterflies per signal, spread over the block; consecutive threads take
// consecutive q (or p), so shared-memory accesses are unit-stride. The caller
// must have synchronised after filling src; returns after a barrier.
template <typename T>
__device__ __forceinline__ void butterfly(const Cx<T>* x, Cx<T>* y, const Cx<T>* tw, int s, int m, int p, int q,
                                          bool inverse) {
  const Cx<T> u = x[q + s * p], v = x[q + s * (p + m)];
  Cx<T> w = tw[p * s];
  if (inverse) w.im = -w.im;
  y[q + 2 * s * p] = u + v;
  y[q + 2 * s * p + s] = (u - v) * w;
}

template <typename T>
__device__ Cx<T>* stockham(Cx<T>* src, Cx<T>* dst, const Cx<T>* tw, int n, int log2n, int pitch, int signals,
                           bool inverse) {
  const int half = n >> 1;
  for (int stage = 0; stage < log2n; ++stage) {
    const int s = 1 << stage, m = half >> stage;
    for (int t = static_cast<int>(threadIdx.x); t < signals * half; t += static_cast<int>(blockDim.x)) {
      const int sig = t >> (log2n - 1), bt = t & (half - 1);
      butterfly(src + sig * pitch, dst + sig * pitch, tw, s, m, bt >> stage, bt & (s - 1), inverse);
    }
    __syncthreads();
    Cx<T>* swap = src;
    src = dst;
    dst = swap;
  }
  return src;
}

// v4's transform of short signals: one thread per signal, held in registers
// through every stage. The butterflies are the shared-memory Stockham's, in
// the same order, so the results are the same bits; what changes is the
// traffic. The shared-memory version reads and writes every value once per
// stage, with a barrier between stages; this one reads and writes each value
// once in all, and needs one barrier at the end. With the signals at an odd
// pitch, consecutive threads' accesses (a pitch apart) are conflict-free.
// Up to 16 points: 16 complex values and their 16 of scratch are 64
// registers in float32, 128 in float64.
constexpr int kMaxRegisterFftLog2 = 4;

template <typename T, int kLog2>
__device__ __forceinline__ void stockham_in_registers(Cx<T>* x, const Cx<T>* tw, bool inverse) {
  constexpr int kN = 1 << kLog2, kHalf = kN / 2;
  Cx<T> y[kN];
  CK_UNROLL for (int stage = 0; stage < kLog2; ++stage) {
    CK_UNROLL for (int bt = 0; bt < kHalf; ++bt) {
      butterfly(x, y, tw, 1 << stage, kHalf >> stage, bt >> stage, bt & ((1 << stage) - 1), inverse);
    }
    CK_UNROLL for (int i = 0; i < kN; ++i) x[i] = y[i];
  }
}

template <typename T, int kLog2>
__device__ void signals_in_registers(Cx<T>* data, const Cx<T>* tw, int pitch, int signals, bool inverse) {
  constexpr int kN = 1 << kLog2;
  for (int sig = static_cast<int>(threadIdx.x); sig < signals; sig += static_cast<int>(blockDim.x)) {
    Cx<T> x[kN];
    CK_UNROLL for (int i = 0; i < kN; ++i) x[i] = data[sig * pitch + i];
    stockham_in_registers<T, kLog2>(x, tw, inverse);
    CK_UNROLL for (int i = 0; i < kN; ++i) data[sig * pitch + i] = x[i];
  }
  __syncthreads();
}

// stockham()'s contract, in registers where the signals are short enough (the
// result then stays in src), else stockham() itself.
template <typename T>
__device__ Cx<T>* fft_signals(Cx<T>* src, Cx<T>* dst, const Cx<T>* tw, int n, int log2n, int pitch, int signals,
                              bool inverse) {
  static_assert(kMaxRegisterFftLog2 == 4, "the cases below list every register length");
  switch (log2n) {
    case 1: signals_in_registers<T, 1>(src, tw, pitch, signals, inverse); return src;
    case 2: signals_in_registers<T, 2>(src, tw, pitch, signals, inverse); return src;
    case 3: signals_in_registers<T, 3>(src, tw, pitch, signals, inverse); return src;
    case 4: signals_in_registers<T, 4>(src, tw, pitch, signals, inverse); return src;
    default: return stockham(src, dst, tw, n, log2n, pitch, signals, inverse);
  }
}

// One real row of a transform, as the row kernels see it: values come from
// offset + (column), columns [lo, hi) are inside the source, `aux` is the
// sink's channel (for the bias).
struct RowRef {
  int64_t offset;
  int lo, hi, aux;
};

// Bytes of `count` RowRefs at the head of a block's shared memory, rounded up
// so that the complex values after them stay aligned.
__host__ __device__ constexpr std::size_t row_refs_bytes(int64_t count) {
  return (static_cast<std::size_t>(count) * sizeof(RowRef) + 15) / 16 * 16;
}

// ---- Sources: where the real rows of the forward transform come from.

// Rows of overlap-save tiles cut from planes (see FftTileSource).
template <typename T>
struct TileRows {
  const T* planes;
  int channels, plane_h, plane_w, step_h, step_w, offset_h, offset_w, size_h, size_w, tiles_w, tiles_per_image, n0;
  int64_t M;
  __device__ RowRef prepare(int64_t row, int64_t x) const {
    const int c = static_cast<int>(x / M);
    const int64_t m = x % M;
    const int image = n0 + static_cast<int>(m / tiles_per_image), within = static_cast<int>(m % tiles_per_image);
    const int h = within / tiles_w * step_h + offset_h + static_cast<int>(row);
    if (row >= size_h || h < 0 || h >= plane_h) return {0, 0, 0, 0};
    const int w0 = within % tiles_w * step_w + offset_w;
    return {((static_cast<int64_t>(image) * channels + c) * plane_h + h) * plane_w + w0, w0 < 0 ? -w0 : 0,
            size_w < plane_w - w0 ? size_w : plane_w - w0, 0};
  }
  __device__ T value(const RowRef& r, int j) const { return j >= r.lo && j < r.hi ? planes[r.offset + j] : T(0); }
};

// Rows of filter tiles: taps at dilated positions (see FftFilterSource).
template <typename T>
struct FilterRows {
  const T* w;
  int O, I, R, S, dil_h, dil_w;
  bool flip;
  int Cg, Kg;
  __device__ RowRef prepare(int64_t row, int64_t x) const {
    if (row % dil_h != 0 || row / dil_h >= R) return {0, 0, 0, 0};
    const int r = static_cast<int>(row / dil_h);
    const int o = static_cast<int>(x / I), i = static_cast<int>(x % I);
    const int64_t filter = flip ? (static_cast<int64_t>(o / Cg) * Kg + i) * Cg + o % Cg : x;
    return {(filter * R + (flip ? R - 1 - r : r)) * S, 0, S, 0};
  }
  __device__ T value(const RowRef& r, int j) const {
    if (j % dil_w != 0 || j / dil_w >= r.hi) return T(0);
    const int s = j / dil_w;
    return w[r.offset + (flip ? S - 1 - s : s)];
  }
};

// Contiguous tiles [x][tile_h][tile_w] (the test hooks).
template <typename T>
struct ContiguousRows {
  const T* tiles;
  int tile_h, tile_w;
  __device__ RowRef prepare(int64_t row, int64_t x) const { return {(x * tile_h + row) * tile_w, 0, tile_w, 0}; }
  __device__ T value(const RowRef& r, int j) const { return j < r.hi ? tiles[r.offset + j] : T(0); }
};

// ---- Sinks: where the real rows of the inverse transform go. row(ri) is the
// tile row that sink row ri takes; only those rows are transformed.

template <typename T>
struct TileOut {
  T* out;
  const T* bias;
  int O, P, Q, out_h, out_w, tiles_w, tiles_per_image, n0;
  int64_t M;
  T scale;
  __device__ int64_t row(int64_t ri) const { return ri; }
  __device__ RowRef prepare(int64_t ri, int64_t x) const {
    const int o = static_cast<int>(x / M);
    const int64_t m = x % M;
    const int image = n0 + static_cast<int>(m / tiles_per_image), within = static_cast<int>(m % tiles_per_image);
    const int p = within / tiles_w * out_h + static_cast<int>(ri), q0 = within % tiles_w * out_w;
    if (p >= P) return {0, 0, 0, 0};
    return {((static_cast<int64_t>(image) * O + o) * P + p) * Q + q0, 0, out_w < Q - q0 ? out_w : Q - q0, o};
  }
  __device__ void store(const RowRef& r, int j, T v) const {
    if (j < r.hi) out[r.offset + j] = v * scale + (bias != nullptr ? bias[r.aux] : T(0));
  }
};

template <typename T>
struct FilterOut {
  T* dw;
  int R, S, dil_h, dil_w;
  T scale;
  __device__ int64_t row(int64_t ri) const { return ri * dil_h; }
  __device__ RowRef prepare(int64_t ri, int64_t x) const { return {(x * R + ri) * S, 0, S, 0}; }
  __device__ void store(const RowRef& r, int j, T v) const {
    if (j % dil_w == 0 && j / dil_w < r.hi) dw[r.offset + j / dil_w] = v * scale;
  }
};

template <typename T>
struct ContiguousOut {
  T* tiles;
  int tile_h, tile_w;
  __device__ int64_t row(int64_t ri) const { return ri; }
  __device__ RowRef prepare(int64_t ri, int64_t x) const { return {(x * tile_h + ri) * tile_w, 0, tile_w, 0}; }
  __device__ void store(const RowRef& r, int j, T v) const { tiles[r.offset + j] = v; }
};

// Launch geometry of a row pass (computed on the host).
struct RowPlan {
  int n, log2n, bins;  // transform length, its log2, n/2 + 1 half-spectrum bins
  int signals;         // complex FFTs per block (a paired block holds 2 real rows per FFT)
  int pitch;           // shared-memory stride between signals: n + 2 (room for the inverse's bins)
  int64_t X;           // signals per frequency in the spectra
  int64_t items;       // real rows in the pass: (rows per signal) * X
};

// Shared memory of a row block: [per-block RowRefs][twiddles][a][b].
template <typename T>
__device__ __forceinline__ void carve_row_shared(unsigned char* smem, const RowPlan& plan, int per_block, RowRef*& refs,
                                                 Cx<T>*& tw, Cx<T>*& a, Cx<T>*& b) {
  refs = reinterpret_cast<RowRef*>(smem);
  tw = reinterpret_cast<Cx<T>*>(smem + row_refs_bytes(per_block));
  a = tw + (plan.n / 2 > 0 ? plan.n / 2 : 1);
  b = a + plan.signals * plan.pitch;
}

// Forward row pass: real rows item = row * X + x from `src`, FFT, bins
// k <= n/2 to spectra[(row * bins + k) * X + x]. A block takes `per_block`
// consecutive items, so its stores for one k are a contiguous run of x.
// kPaired (v2): items 2l and 2l+1 share one complex FFT, z = a + ib, and are
// separated with A[k] = (Z[k] + conj Z[n-k]) / 2, B[k] = (Z[k] - conj Z[n-k]) / 2i.
template <typename T, bool kPaired, typename Source>
__global__ void __launch_bounds__(kFftThreads) fft_rows_forward(Source src, RowPlan plan, Cx<T>* spectra) {
  CK_DYNAMIC_SHARED(unsigned char, smem);
  const int per_block = kPaired ? 2 * plan.signals : plan.signals;
  RowRef* refs;
  Cx<T>* tw;
  Cx<T>* a;
  Cx<T>* b;
  carve_row_shared(smem, plan, per_block, refs, tw, a, b);
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  const int64_t item0 = static_cast<int64_t>(blockIdx.x) * per_block;
  load_twiddles(tw, plan.n);
  for (int l = tid; l < per_block; l += threads) {
    const int64_t item = item0 + l;
    refs[l] = item < plan.items ? src.prepare(item / plan.X, item % plan.X) : RowRef{0, 0, 0, 0};
  }
  __syncthreads();
  // Consecutive threads read consecutive columns of one source row.
  for (int e = tid; e < plan.signals * plan.n; e += threads) {
    const int sig = e >> plan.log2n, j = e & (plan.n - 1);
    const Cx<T> z = kPaired ? Cx<T>{src.value(refs[2 * sig], j), src.value(refs[2 * sig + 1], j)}
                            : Cx<T>{src.value(refs[sig], j), T(0)};
    a[sig * plan.pitch + j] = z;
  }
  __syncthreads();
  const Cx<T>* z = stockham(a, b, tw, plan.n, plan.log2n, plan.pitch, plan.signals, false);
  for (int e = tid; e < plan.bins * per_block; e += threads) {
    const int k = e / per_block, l = e % per_block;
    const int64_t item = item0 + l;
    if (item >= plan.items) continue;
    Cx<T> v;
    if (kPaired) {
      const Cx<T>* zs = z + (l >> 1) * plan.pitch;
      const Cx<T> zk = zs[k], zn = zs[(plan.n - k) & (plan.n - 1)];
      v = (l & 1) == 0 ? Cx<T>{(zk.re + zn.re) * T(0.5), (zk.im - zn.im) * T(0.5)}
                       : Cx<T>{(zk.im + zn.im) * T(0.5), (zn.re - zk.re) * T(0.5)};
    } else {
      v = z[l * plan.pitch + k];
    }
    spectra[(item / plan.X * plan.bins + k) * plan.X + item % plan.X] = v;
  }
}

// Inverse row pass: for item = ri * X + x, the half spectrum of tile row
// sink.row(ri) (bins k <= n/2 at spectra[(row * bins + k) * X + x]) is
// extended by Hermitian symmetry (X[n-k] = conj X[k]; the imaginary parts of
// the DC and Nyquist bins, rounding noise for a real signal, are dropped),
// inverse transformed, and its real part handed to the sink. kPaired: two
// rows a, b as one inverse FFT of A + iB, then a = Re, b = Im.
template <typename T, bool kPaired, typename Sink>
__global__ void __launch_bounds__(kFftThreads) fft_rows_inverse(Sink sink, RowPlan plan, const Cx<T>* spectra) {
  CK_DYNAMIC_SHARED(unsigned char, smem);
  const int per_block = kPaired ? 2 * plan.signals : plan.signals;
  RowRef* refs;
  Cx<T>* tw;
  Cx<T>* a;
  Cx<T>* b;
  carve_row_shared(smem, plan, per_block, refs, tw, a, b);
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  const int64_t item0 = static_cast<int64_t>(blockIdx.x) * per_block;
  load_twiddles(tw, plan.n);
  for (int l = tid; l < per_block; l += threads) {
    const int64_t item = item0 + l;
    refs[l] = item < plan.items ? sink.prepare(item / plan.X, item % plan.X) : RowRef{0, 0, 0, 0};
  }
  // The bins, [l][k] in b (pitch n + 2 leaves room for 2 * (n/2 + 1) per signal).
  for (int e = tid; e < plan.bins * per_block; e += threads) {
    const int k = e / per_block, l = e % per_block;
    const int64_t item = item0 + l;
    b[l * plan.bins + k] = item < plan.items
                               ? spectra[(sink.row(item / plan.X) * plan.bins + k) * plan.X + item % plan.X]
                               : Cx<T>{T(0), T(0)};
  }
  __syncthreads();
  const int half = plan.n / 2;
  for (int e = tid; e < plan.signals * plan.n; e += threads) {
    const int sig = e >> plan.log2n, k = e & (plan.n - 1);
    const bool upper = k >= plan.bins;
    const int kk = upper ? plan.n - k : k;
    auto bin = [&](int l) {
      Cx<T> v = b[l * plan.bins + kk];
      if (kk == 0 || kk == half) v.im = T(0);
      if (upper) v.im = -v.im;
      return v;
    };
    Cx<T> z;
    if (kPaired) {
      const Cx<T> A = bin(2 * sig), B = bin(2 * sig + 1);
      z = {A.re - B.im, A.im + B.re};
    } else {
      z = bin(sig);
    }
    a[sig * plan.pitch + k] = z;
  }
  __syncthreads();
  const Cx<T>* z = stockham(a, b, tw, plan.n, plan.log2n, plan.pitch, plan.signals, true);
  for (int e = tid; e < per_block * plan.n; e += threads) {
    const int l = e >> plan.log2n, j = e & (plan.n - 1);
    if (item0 + l >= plan.items) continue;
    const Cx<T> v = z[(kPaired ? l >> 1 : l) * plan.pitch + j];
    sink.store(refs[l], j, kPaired && (l & 1) ? v.im : v.re);
  }
}

// Launch geometry of a strided pass: signal `item` has its n values at
// data[item * signal_stride + i * elem_stride].
struct StridedPlan {
  int n, log2n, signals, pitch;
  int64_t total, signal_stride, elem_stride;
  bool inverse;
};

// In-place FFTs of strided signals. The column pass of a 2-D transform uses
// signal_stride 1 and elem_stride bins * X: for each element i a block reads
// and writes a contiguous run of `signals` values (coalesced), and the pitch
// n + 1 keeps the transposed shared-memory writes off a single bank.
template <typename T>
__global__ void __launch_bounds__(kFftThreads) fft_strided(StridedPlan plan, Cx<T>* data) {
  CK_DYNAMIC_SHARED(unsigned char, smem);
  Cx<T>* tw = reinterpret_cast<Cx<T>*>(smem);
  Cx<T>* a = tw + (plan.n / 2 > 0 ? plan.n / 2 : 1);
  Cx<T>* b = a + plan.signals * plan.pitch;
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  const int64_t item0 = static_cast<int64_t>(blockIdx.x) * plan.signals;
  load_twiddles(tw, plan.n);
  for (int e = tid; e < plan.signals * plan.n; e += threads) {
    const int i = e / plan.signals, l = e % plan.signals;
    const int64_t item = item0 + l;
    a[l * plan.pitch + i] =
        item < plan.total ? data[item * plan.signal_stride + i * plan.elem_stride] : Cx<T>{T(0), T(0)};
  }
  __syncthreads();
  const Cx<T>* z = stockham(a, b, tw, plan.n, plan.log2n, plan.pitch, plan.signals, plan.inverse);
  for (int e = tid; e < plan.signals * plan.n; e += threads) {
    const int i = e / plan.signals, l = e % plan.signals;
    const int64_t item = item0 + l;
    if (item < plan.total) data[item * plan.signal_stride + i * plan.elem_stride] = z[l * plan.pitch + i];
  }
}

// ============================== v4: the 2-D transform fused in one block ==============================

// Launch geometry of a fused transform: a block transforms 2 * pairs whole
// tiles, signals x0 .. x0 + 2 * pairs - 1, without leaving shared memory.
//
// Both pitches are odd (for tiles at least 4 wide), so that a half-warp's
// 8-byte accesses at a stride of one pitch, or of a tile's bins * col_pitch,
// fall in 16 different bank pairs: the transposition between the stages walks
// rows at the row pitch, and the spectra are read and written tile by tile.
struct FusedPlan {
  int th, tw, log2h, log2w, bins;  // tile sides, their log2, tw/2 + 1 half-spectrum bins
  int pairs;                       // tile pairs per block (tiles 2p and 2p + 1 share the row FFTs)
  int rows;                        // tile rows the pass reads (forward) or the sink takes (inverse)
  int row_pitch;                   // tw + 1: a row signal's slot
  int col_pitch;                   // th + 1: a column signal's slot, [tile][bin] in order
  int64_t X;                       // signals per frequency in the spectra
};

// Complex values in each of a fused block's two buffers: the column stage's
// 2 * pairs * bins signals of col_pitch, more than the row stage's pairs * th
// of row_pitch.
__host__ __device__ constexpr int fused_buffer_values(int th, int tw, int pairs) {
  return pairs * (tw + 2) * (th + 1);
}

// Shared memory of a fused block: [RowRefs, one per tile row][row twiddles]
// [column twiddles][a][b]. Constructed by every thread of the block, which
// also fills both twiddle tables (the caller synchronises before using them).
template <typename T>
struct FusedShared {
  RowRef* refs;
  Cx<T>* tw_row;
  Cx<T>* tw_col;
  Cx<T>* a;
  Cx<T>* b;
  __device__ FusedShared(unsigned char* smem, const FusedPlan& plan) {
    refs = reinterpret_cast<RowRef*>(smem);
    tw_row = reinterpret_cast<Cx<T>*>(smem + row_refs_bytes(2 * plan.pairs * plan.th));
    tw_col = tw_row + (plan.tw / 2 > 0 ? plan.tw / 2 : 1);
    a = tw_col + (plan.th / 2 > 0 ? plan.th / 2 : 1);
    b = a + fused_buffer_values(plan.th, plan.tw, plan.pairs);
    load_twiddles(tw_row, plan.tw);
    load_twiddles(tw_col, plan.th);
  }
};

// Forward: gather the block's tiles, pair them row by row (z = a + ib, tile
// 2p in the real part, 2p + 1 in the imaginary), transform the rows, separate
// the pair's half spectra into column signals [tile][bin][row] (unit stride
// down a column), transform the columns, and write frequency f = row * bins +
// k of tile x to spectra[f * X + x]: consecutive threads take consecutive x,
// so each frequency's stores are one contiguous run. Global memory sees the
// source once and the spectra once; v2 reads and writes the spectra a second
// time between its row and column passes.
template <typename T, typename Source>
__global__ void __launch_bounds__(kFftThreads) fft_2d_fused_forward(Source src, FusedPlan plan, Cx<T>* spectra) {
  CK_DYNAMIC_SHARED(unsigned char, smem);
  const FusedShared<T> sh(smem, plan);
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  const int tiles = 2 * plan.pairs, th = plan.th, bins = plan.bins;
  const int64_t x0 = static_cast<int64_t>(blockIdx.x) * tiles;
  for (int l = tid; l < tiles * th; l += threads) {
    const int64_t x = x0 + (l >> plan.log2h);
    sh.refs[l] = x < plan.X ? src.prepare(l & (th - 1), x) : RowRef{0, 0, 0, 0};
  }
  __syncthreads();
  // Row signal (p, r): consecutive threads read consecutive columns of a row.
  for (int e = tid; e < plan.pairs * th * plan.tw; e += threads) {
    const int sig = e >> plan.log2w, j = e & (plan.tw - 1);
    const int p = sig >> plan.log2h, r = sig & (th - 1);
    sh.a[sig * plan.row_pitch + j] = {src.value(sh.refs[2 * p * th + r], j),
                                      src.value(sh.refs[(2 * p + 1) * th + r], j)};
  }
  __syncthreads();
  Cx<T>* z = fft_signals(sh.a, sh.b, sh.tw_row, plan.tw, plan.log2w, plan.row_pitch, plan.pairs * th, false);
  Cx<T>* cols = z == sh.a ? sh.b : sh.a;
  // Consecutive threads take consecutive bins k of one row: the reads walk
  // the row (and back from its end), the writes walk tiles' columns at the
  // odd column pitch.
  for (int e = tid; e < tiles * th * bins; e += threads) {
    const int tr = e / bins, k = e - tr * bins;  // tr = tile * th + r
    const int t = tr >> plan.log2h, r = tr & (th - 1), tk = t * bins + k;
    const Cx<T>* zs = z + ((t >> 1) * th + r) * plan.row_pitch;
    const Cx<T> zk = zs[k], zn = zs[(plan.tw - k) & (plan.tw - 1)];
    cols[tk * plan.col_pitch + r] = (t & 1) == 0 ? Cx<T>{(zk.re + zn.re) * T(0.5), (zk.im - zn.im) * T(0.5)}
                                                 : Cx<T>{(zk.im + zn.im) * T(0.5), (zn.re - zk.re) * T(0.5)};
  }
  __syncthreads();
  const Cx<T>* spec = fft_signals(cols, z, sh.tw_col, th, plan.log2h, plan.col_pitch, tiles * bins, false);
  for (int e = tid; e < th * bins * tiles; e += threads) {
    const int t = e % tiles, f = e / tiles;
    const int r = f / bins, k = f - r * bins;
    if (x0 + t < plan.X) spectra[f * plan.X + x0 + t] = spec[(t * bins + k) * plan.col_pitch + r];
  }
}

// Inverse: read the block's spectra as column signals, inverse-transform the
// columns, rebuild the rows the sink takes (Hermitian extension, the pair as
// A + iB), inverse-transform them, and hand tile 2p's row the real part and
// tile 2p + 1's the imaginary part.
template <typename T, typename Sink>
__global__ void __launch_bounds__(kFftThreads) fft_2d_fused_inverse(Sink sink, FusedPlan plan, const Cx<T>* spectra) {
  CK_DYNAMIC_SHARED(unsigned char, smem);
  const FusedShared<T> sh(smem, plan);
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  const int tiles = 2 * plan.pairs, th = plan.th, bins = plan.bins, rows = plan.rows, half = plan.tw / 2;
  const int64_t x0 = static_cast<int64_t>(blockIdx.x) * tiles;
  for (int l = tid; l < tiles * rows; l += threads) {
    const int t = l / rows, ri = l - t * rows;
    sh.refs[l] = x0 + t < plan.X ? sink.prepare(ri, x0 + t) : RowRef{0, 0, 0, 0};
  }
  // Consecutive threads read consecutive x of one frequency (coalesced).
  for (int e = tid; e < th * bins * tiles; e += threads) {
    const int t = e % tiles, f = e / tiles;
    const int r = f / bins, k = f - r * bins;
    sh.a[(t * bins + k) * plan.col_pitch + r] = x0 + t < plan.X ? spectra[f * plan.X + x0 + t] : Cx<T>{T(0), T(0)};
  }
  __syncthreads();
  const Cx<T>* cols = fft_signals(sh.a, sh.b, sh.tw_col, th, plan.log2h, plan.col_pitch, tiles * bins, true);
  Cx<T>* z = cols == sh.a ? sh.b : sh.a;
  for (int e = tid; e < plan.pairs * rows * plan.tw; e += threads) {
    const int sig = e >> plan.log2w, k = e & (plan.tw - 1);
    const int p = sig / rows, r = static_cast<int>(sink.row(sig - p * rows));
    const bool upper = k >= bins;
    const int kk = upper ? plan.tw - k : k;
    auto bin = [&](int t) {
      Cx<T> v = cols[(t * bins + kk) * plan.col_pitch + r];
      if (kk == 0 || kk == half) v.im = T(0);
      if (upper) v.im = -v.im;
      return v;
    };
    const Cx<T> A = bin(2 * p), B = bin(2 * p + 1);
    z[sig * plan.row_pitch + k] = {A.re - B.im, A.im + B.re};
  }
  __syncthreads();
  const Cx<T>* out = fft_signals(z, const_cast<Cx<T>*>(cols), sh.tw_row, plan.tw, plan.log2w, plan.row_pitch,
                                 plan.pairs * rows, true);
  for (int e = tid; e < tiles * rows * plan.tw; e += threads) {
    const int l = e >> plan.log2w, j = e & (plan.tw - 1);
    const int t = l / rows, ri = l - t * rows;
    if (x0 + t >= plan.X) continue;
    const Cx<T> v = out[((t >> 1) * rows + ri) * plan.row_pitch + j];
    sink.store(sh.refs[l], j, (t & 1) ? v.im : v.re);
  }
}

// ============================== channel sums: batched complex GEMM ==============================

template <typename T>
struct GemmArgs {
  const Cx<T>* a;
  const Cx<T>* b;
  Cx<T>* c;
  int F, groups, rows, cols, depth;
  int64_t a_f, a_g, a_r, a_k, b_f, b_g, b_k, b_c, c_f, c_g, c_r, c_c;
  bool conj_a, accumulate;
};

// v1: one thread per C element, `depth` products from global memory each.
// Consecutive threads take consecutive columns (contiguous m in the forward
// product, so B loads coalesce and the A load is a broadcast).
template <typename T>
__global__ void spectral_gemm_naive(GemmArgs<T> g) {
  const int64_t total = static_cast<int64_t>(g.F) * g.groups * g.rows * g.cols;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int col = static_cast<int>(e % g.cols);
    int64_t rest = e / g.cols;
    const int row = static_cast<int>(rest % g.rows);
    rest /= g.rows;
    const int grp = static_cast<int>(rest % g.groups);
    const int64_t f = rest / g.groups;
    const Cx<T>* a = g.a + f * g.a_f + grp * g.a_g + row * g.a_r;
    const Cx<T>* b = g.b + f * g.b_f + grp * g.b_g + col * g.b_c;
    Cx<T> acc{T(0), T(0)};
    for (int k = 0; k < g.depth; ++k) {
      Cx<T> av = a[k * g.a_k];
      if (g.conj_a) av.im = -av.im;
      mac(acc, av, b[k * g.b_k]);
    }
    Cx<T>* c = g.c + f * g.c_f + grp * g.c_g + row * g.c_r + col * g.c_c;
    *c = g.accumulate ? *c + acc : acc;
  }
}

constexpr int kGemmDepth = 16;  // k per shared-memory step
// v4's block tile, and the fewest such blocks it runs with: two for each of an
// H100's 132 SMs. With fewer (the backward-weights product of a small chunk,
// a few frequencies of 64 x 64 channels) v2's 32 x 32 tiles, four times the
// blocks, keep more SMs busy.
constexpr int kRegisterTile = 64;
constexpr int64_t kRegisterTileMinBlocks = kTwoBlocksPerSm;

// v2 and v4: block = a kTile x kTile tile of C for one (f, group), with
// (kTile/kPer)^2 threads, each with kPer x kPer outputs at
// (ty + kTile/kPer * i, tx + kTile/kPer * j). Per step the block stages a
// kTile x 16 slice of A and a 16 x kTile slice of B (read along whichever
// index has unit stride, so the loads coalesce in both the forward and the
// backward-weights products); then every thread does kPer^2 complex MACs per
// k from shared memory. Rows are padded by one against bank conflicts.
//   v2, kPer = 2: kTile 32 (256 threads) for large products and 16 (64
//       threads) when a side is at most 16, e.g. few channels per group, so
//       small products do not idle 3/4 of a block. A staged value serves
//       kTile products instead of v1's one; a thread reads 4 values per 4
//       complex MACs (16 FMAs).
//   v4, kPer = 4 (register tiles): kTile 64, 256 threads. A thread reads 8
//       values per 16 complex MACs (64 FMAs), half of v2's shared-memory
//       traffic per FMA, and a staged value serves 64 products. Within a warp
//       (two values of ty, sixteen of tx) an A read is two broadcasts and a B
//       read sixteen consecutive values, as in v2.
template <typename T, int kTile, int kPer>
__global__ void __launch_bounds__(kTile * kTile / (kPer * kPer)) spectral_gemm_tiled(GemmArgs<T> g) {
  constexpr int kSide = kTile / kPer, kThreads = kSide * kSide, kPitch = kTile + 1;
  CK_DYNAMIC_SHARED(unsigned char, smem);
  Cx<T>* As = reinterpret_cast<Cx<T>*>(smem);  // [kGemmDepth][kTile + 1]
  Cx<T>* Bs = As + kGemmDepth * kPitch;
  const int tiles_r = (g.rows + kTile - 1) / kTile, tiles_c = (g.cols + kTile - 1) / kTile;
  int64_t rest = blockIdx.x;
  const int r0 = static_cast<int>(rest / tiles_c % tiles_r) * kTile;
  const int c0 = static_cast<int>(rest % tiles_c) * kTile;
  rest /= static_cast<int64_t>(tiles_c) * tiles_r;
  const int grp = static_cast<int>(rest % g.groups);
  const int64_t f = rest / g.groups;
  const Cx<T>* A = g.a + f * g.a_f + grp * g.a_g;
  const Cx<T>* B = g.b + f * g.b_f + grp * g.b_g;
  const int tid = static_cast<int>(threadIdx.x), tx = tid % kSide, ty = tid / kSide;
  Cx<T> acc[kPer][kPer];
  CK_UNROLL for (int i = 0; i < kPer; ++i) {
    CK_UNROLL for (int j = 0; j < kPer; ++j) acc[i][j] = {T(0), T(0)};
  }
  const bool a_k_fast = g.a_k == 1, b_c_fast = g.b_c == 1;
  for (int k0 = 0; k0 < g.depth; k0 += kGemmDepth) {
    for (int l = tid; l < kTile * kGemmDepth; l += kThreads) {
      const int kk = a_k_fast ? l % kGemmDepth : l / kTile, rr = a_k_fast ? l / kGemmDepth : l % kTile;
      const int r = r0 + rr, k = k0 + kk;
      Cx<T> v{T(0), T(0)};
      if (r < g.rows && k < g.depth) {
        v = A[r * g.a_r + k * g.a_k];
        if (g.conj_a) v.im = -v.im;
      }
      As[kk * kPitch + rr] = v;
    }
    for (int l = tid; l < kTile * kGemmDepth; l += kThreads) {
      const int cc = b_c_fast ? l % kTile : l / kGemmDepth, kk = b_c_fast ? l / kTile : l % kGemmDepth;
      const int c = c0 + cc, k = k0 + kk;
      Bs[kk * kPitch + cc] = c < g.cols && k < g.depth ? B[k * g.b_k + c * g.b_c] : Cx<T>{T(0), T(0)};
    }
    __syncthreads();
    CK_UNROLL for (int kk = 0; kk < kGemmDepth; ++kk) {
      Cx<T> av[kPer], bv[kPer];
      CK_UNROLL for (int i = 0; i < kPer; ++i) av[i] = As[kk * kPitch + ty + kSide * i];
      CK_UNROLL for (int j = 0; j < kPer; ++j) bv[j] = Bs[kk * kPitch + tx + kSide * j];
      CK_UNROLL for (int i = 0; i < kPer; ++i) {
        CK_UNROLL for (int j = 0; j < kPer; ++j) mac(acc[i][j], av[i], bv[j]);
      }
    }
    __syncthreads();
  }
  CK_UNROLL for (int i = 0; i < kPer; ++i) {
    CK_UNROLL for (int j = 0; j < kPer; ++j) {
      const int r = r0 + ty + kSide * i, c = c0 + tx + kSide * j;
      if (r < g.rows && c < g.cols) {
        Cx<T>* out = g.c + f * g.c_f + grp * g.c_g + r * g.c_r + c * g.c_c;
        *out = g.accumulate ? *out + acc[i][j] : acc[i][j];
      }
    }
  }
}

// ============================== host side: our FFT ==============================

int log2_of(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

void check_transform_size(int n, const char* what) {
  CK_CHECK(n >= 1 && n <= kMaxGpuFftSize && (n & (n - 1)) == 0, "conv2d_fft: ", what, " ", n,
           " must be a power of two from 1 to ", kMaxGpuFftSize);
}

// Signals per block: about kFftValuesPerBlock values, with both ping-pong
// buffers and `extra` bytes per signal (the row passes' RowRefs) within
// kFftBufferBudget.
int signals_per_block(int n, int pitch, std::size_t cx_bytes, std::size_t extra = 0) {
  int signals = std::max(1, kFftValuesPerBlock / n);
  while (signals > 1 && signals * (2 * pitch * cx_bytes + extra) > kFftBufferBudget) signals /= 2;
  return signals;
}

unsigned blocks_for(int64_t items, int64_t per_block) {
  const int64_t blocks = (items + per_block - 1) / per_block;
  CK_CHECK(blocks <= 0x7fffffff, "conv2d_fft: ", items, " transforms need more than 2^31 - 1 blocks");
  return static_cast<unsigned>(std::max<int64_t>(blocks, 1));
}

template <int kTile, typename Args>
int64_t gemm_blocks(const Args& g) {
  return static_cast<int64_t>((g.rows + kTile - 1) / kTile) * ((g.cols + kTile - 1) / kTile) * g.F * g.groups;
}

template <typename T, int kTile, int kPer>
void launch_gemm_tiled(const GemmArgs<T>& g) {
  launch(spectral_gemm_tiled<T, kTile, kPer>, dim3(blocks_for(gemm_blocks<kTile>(g), 1)),
         dim3(kTile * kTile / (kPer * kPer)), 2 * kGemmDepth * (kTile + 1) * sizeof(Cx<T>), nullptr, g);
}

template <typename T>
RowPlan row_plan(int n, int64_t X, int64_t items, bool paired) {
  RowPlan plan{n, log2_of(n), n / 2 + 1, 0, n + 2, X, items};
  plan.signals = signals_per_block(n, plan.pitch, sizeof(Cx<T>), (paired ? 2 : 1) * sizeof(RowRef));
  return plan;
}

template <typename T>
std::size_t row_shared_bytes(const RowPlan& plan, bool paired) {
  const int per_block = paired ? 2 * plan.signals : plan.signals;
  return row_refs_bytes(per_block) + std::max(1, plan.n / 2) * sizeof(Cx<T>) +
         2 * static_cast<std::size_t>(plan.signals) * plan.pitch * sizeof(Cx<T>);
}

template <typename T, bool kPaired, typename Source>
void rows_forward(const Source& src, int n, int64_t X, int rows, Cx<T>* spectra) {
  const RowPlan plan = row_plan<T>(n, X, rows * X, kPaired);
  const std::size_t shared = row_shared_bytes<T>(plan, kPaired);
  CK_CHECK(shared <= kMaxSharedBytes, "conv2d_fft: a row block of length ", n, " needs ", shared, " bytes of shared memory");
  launch(fft_rows_forward<T, kPaired, Source>, dim3(blocks_for(plan.items, kPaired ? 2 * plan.signals : plan.signals)),
         dim3(kFftThreads), shared, nullptr, src, plan, spectra);
}

template <typename T, bool kPaired, typename Sink>
void rows_inverse(const Sink& sink, int n, int64_t X, int rows, const Cx<T>* spectra) {
  const RowPlan plan = row_plan<T>(n, X, rows * X, kPaired);
  const std::size_t shared = row_shared_bytes<T>(plan, kPaired);
  CK_CHECK(shared <= kMaxSharedBytes, "conv2d_fft: a row block of length ", n, " needs ", shared, " bytes of shared memory");
  launch(fft_rows_inverse<T, kPaired, Sink>, dim3(blocks_for(plan.items, kPaired ? 2 * plan.signals : plan.signals)),
         dim3(kFftThreads), shared, nullptr, sink, plan, spectra);
}

template <typename T>
void strided_fft(int n, int64_t total, int64_t signal_stride, int64_t elem_stride, bool inverse, Cx<T>* data) {
  StridedPlan plan{n, log2_of(n), 0, n + 1, total, signal_stride, elem_stride, inverse};
  plan.signals = signals_per_block(n, plan.pitch, sizeof(Cx<T>));
  const std::size_t shared = (std::max(1, n / 2) + 2 * static_cast<std::size_t>(plan.signals) * plan.pitch) * sizeof(Cx<T>);
  CK_CHECK(shared <= kMaxSharedBytes, "conv2d_fft: a transform block of length ", n, " needs ", shared,
           " bytes of shared memory");
  launch(fft_strided<T>, dim3(blocks_for(total, plan.signals)), dim3(kFftThreads), shared, nullptr, plan, data);
}

// ---- v4's fused transforms

template <typename T>
std::size_t fused_shared_bytes(int th, int tw, int pairs) {
  return row_refs_bytes(2 * static_cast<int64_t>(pairs) * th) +
         (std::max(1, tw / 2) + std::max(1, th / 2)) * sizeof(Cx<T>) +
         2 * static_cast<std::size_t>(fused_buffer_values(th, tw, pairs)) * sizeof(Cx<T>);
}

// About kFftValuesPerBlock values in the row stage, halved until the block
// fits kMaxSharedBytes. pairs = 0: not even one pair of tiles fits (float32
// tiles above 2^11 values, float64 above 2^10), and v4 runs v2's passes.
template <typename T>
FusedPlan fused_plan(int th, int tw, int64_t X, int rows) {
  FusedPlan plan{th, tw, log2_of(th), log2_of(tw), tw / 2 + 1, 0, rows, tw + 1, th + 1, X};
  int pairs = std::max(1, kFftValuesPerBlock / (th * tw));
  while (pairs > 0 && fused_shared_bytes<T>(th, tw, pairs) > kMaxSharedBytes) pairs /= 2;
  plan.pairs = pairs;
  return plan;
}

template <typename T, typename Source>
void fused_forward(const FusedPlan& plan, const Source& src, Cx<T>* spectra) {
  launch(fft_2d_fused_forward<T, Source>, dim3(blocks_for(plan.X, 2 * plan.pairs)), dim3(kFftThreads),
         fused_shared_bytes<T>(plan.th, plan.tw, plan.pairs), nullptr, src, plan, spectra);
}

template <typename T, typename Sink>
void fused_inverse(const FusedPlan& plan, const Sink& sink, const Cx<T>* spectra) {
  launch(fft_2d_fused_inverse<T, Sink>, dim3(blocks_for(plan.X, 2 * plan.pairs)), dim3(kFftThreads),
         fused_shared_bytes<T>(plan.th, plan.tw, plan.pairs), nullptr, sink, plan, spectra);
}

// ============================== host side: cuFFT (v3, cuda only) ==============================

#if defined(__CUDACC__)

std::size_t align_up(std::size_t n) { return (n + 255) / 256 * 256; }

void check_cufft(cufftResult status, const char* what) {
  CK_CHECK(status == CUFFT_SUCCESS, "conv2d_fft v3: cuFFT ", what, " failed with status ", static_cast<int>(status));
}

// One cuFFT plan per (direction, dtype, tile, batch), made once and kept for the
// process: planning is far slower than a transform. Plans never allocate; their
// work area is carved from the caller's workspace (fft_transform_scratch_bytes).
struct CufftPlan {
  cufftHandle handle = 0;
  std::size_t work_bytes = 0;
};

const CufftPlan& cufft_plan(bool inverse, bool is_double, int tile_h, int tile_w, int64_t batch) {
  static std::mutex mutex;
  static std::map<std::tuple<bool, bool, int, int, int64_t>, CufftPlan> plans;
  std::lock_guard lock(mutex);
  const auto key = std::make_tuple(inverse, is_double, tile_h, tile_w, batch);
  if (auto it = plans.find(key); it != plans.end()) return it->second;
  CufftPlan plan;
  check_cufft(cufftCreate(&plan.handle), "cufftCreate");
  check_cufft(cufftSetAutoAllocation(plan.handle, 0), "cufftSetAutoAllocation");
  long long n[2] = {tile_h, tile_w};
  long long real_embed[2] = {tile_h, tile_w};
  long long spectrum_embed[2] = {tile_h, tile_w / 2 + 1};
  const long long tile = static_cast<long long>(tile_h) * tile_w;
  // Real tiles are contiguous [x][tile_h][tile_w]; spectra are [f][x]: stride
  // `batch` between frequencies, distance 1 between signals.
  if (!inverse) {
    check_cufft(cufftMakePlanMany64(plan.handle, 2, n, real_embed, 1, tile, spectrum_embed, batch, 1,
                                    is_double ? CUFFT_D2Z : CUFFT_R2C, batch, &plan.work_bytes),
                "plan (real to complex)");
  } else {
    check_cufft(cufftMakePlanMany64(plan.handle, 2, n, spectrum_embed, batch, 1, real_embed, 1, tile,
                                    is_double ? CUFFT_Z2D : CUFFT_C2R, batch, &plan.work_bytes),
                "plan (complex to real)");
  }
  return plans.emplace(key, plan).first->second;
}

template <typename T>
std::size_t cufft_scratch_bytes(int tile_h, int tile_w, int64_t batch) {
  const bool is_double = sizeof(T) == 8;
  const std::size_t work = std::max(cufft_plan(false, is_double, tile_h, tile_w, batch).work_bytes,
                                    cufft_plan(true, is_double, tile_h, tile_w, batch).work_bytes);
  return align_up(static_cast<std::size_t>(batch) * tile_h * tile_w * sizeof(T)) + work;
}

template <typename T, typename Source>
__global__ void gather_tiles(Source src, int tile_h, int tile_w, int64_t X, T* tiles) {
  const int64_t total = X * tile_h * tile_w;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int j = static_cast<int>(e % tile_w);
    const int64_t row = e / tile_w % tile_h, x = e / (static_cast<int64_t>(tile_w) * tile_h);
    tiles[e] = src.value(src.prepare(row, x), j);
  }
}

template <typename T, typename Sink>
__global__ void scatter_tiles(Sink sink, int tile_h, int tile_w, int64_t X, int rows, const T* tiles) {
  const int64_t total = static_cast<int64_t>(rows) * X * tile_w;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int j = static_cast<int>(e % tile_w);
    const int64_t x = e / tile_w % X, ri = e / tile_w / X;
    sink.store(sink.prepare(ri, x), j, tiles[(x * tile_h + sink.row(ri)) * tile_w + j]);
  }
}

template <typename T, typename Source>
void cufft_forward(const Source& src, int tile_h, int tile_w, int64_t X, Cx<T>* spectra, void* scratch) {
  CK_CHECK(scratch != nullptr, "conv2d_fft v3: cuFFT needs scratch (fft_transform_scratch_bytes)");
  const bool is_double = sizeof(T) == 8;
  const CufftPlan& plan = cufft_plan(false, is_double, tile_h, tile_w, X);
  T* tiles = static_cast<T*>(scratch);
  void* work = static_cast<unsigned char*>(scratch) + align_up(static_cast<std::size_t>(X) * tile_h * tile_w * sizeof(T));
  const LaunchShape s = grid_stride_shape(X * tile_h * tile_w, 256, 65535);
  launch(gather_tiles<T, Source>, dim3(s.blocks), dim3(s.threads), 0, nullptr, src, tile_h, tile_w, X, tiles);
  check_cufft(cufftSetWorkArea(plan.handle, work), "cufftSetWorkArea");
  if constexpr (sizeof(T) == 8) {
    check_cufft(cufftExecD2Z(plan.handle, reinterpret_cast<cufftDoubleReal*>(tiles),
                             reinterpret_cast<cufftDoubleComplex*>(spectra)), "exec D2Z");
  } else {
    check_cufft(cufftExecR2C(plan.handle, reinterpret_cast<cufftReal*>(tiles), reinterpret_cast<cufftComplex*>(spectra)),
                "exec R2C");
  }
}

template <typename T, typename Sink>
void cufft_inverse(Cx<T>* spectra, int tile_h, int tile_w, int64_t X, const Sink& sink, int rows, void* scratch) {
  CK_CHECK(scratch != nullptr, "conv2d_fft v3: cuFFT needs scratch (fft_transform_scratch_bytes)");
  const bool is_double = sizeof(T) == 8;
  const CufftPlan& plan = cufft_plan(true, is_double, tile_h, tile_w, X);
  T* tiles = static_cast<T*>(scratch);
  void* work = static_cast<unsigned char*>(scratch) + align_up(static_cast<std::size_t>(X) * tile_h * tile_w * sizeof(T));
  check_cufft(cufftSetWorkArea(plan.handle, work), "cufftSetWorkArea");
  if constexpr (sizeof(T) == 8) {
    check_cufft(cufftExecZ2D(plan.handle, reinterpret_cast<cufftDoubleComplex*>(spectra),
                             reinterpret_cast<cufftDoubleReal*>(tiles)), "exec Z2D");
  } else {
    check_cufft(cufftExecC2R(plan.handle, reinterpret_cast<cufftComplex*>(spectra), reinterpret_cast<cufftReal*>(tiles)),
                "exec C2R");
  }
  const LaunchShape s = grid_stride_shape(static_cast<int64_t>(rows) * X * tile_w, 256, 65535);
  launch(scatter_tiles<T, Sink>, dim3(s.blocks), dim3(s.threads), 0, nullptr, sink, tile_h, tile_w, X, rows, tiles);
}

#endif  // __CUDACC__

void check_version(int version) {
  std::string why;
  CK_CHECK(conv2d_fft_version_available(version, &why), why);
}

// The 2-D forward transform of X signals from `src`, by version.
template <typename T, typename Source>
void forward_2d(int version, const Source& src, int tile_h, int tile_w, int64_t X, Cx<T>* spectra, void* scratch) {
  check_version(version);
  check_transform_size(tile_h, "tile height");
  check_transform_size(tile_w, "tile width");
#if defined(__CUDACC__)
  if (version == 3) return cufft_forward<T>(src, tile_h, tile_w, X, spectra, scratch);
#endif
  (void)scratch;
  if (version == 4) {
    const FusedPlan plan = fused_plan<T>(tile_h, tile_w, X, tile_h);
    if (plan.pairs > 0) return fused_forward<T>(plan, src, spectra);
  }
  if (version == 2 || version == 4) {
    rows_forward<T, true>(src, tile_w, X, tile_h, spectra);
  } else {
    rows_forward<T, false>(src, tile_w, X, tile_h, spectra);
  }
  const int bins = tile_w / 2 + 1;
  strided_fft<T>(tile_h, bins * X, 1, bins * X, false, spectra);
}

// The unnormalised 2-D inverse of X spectra into `sink`, which takes `rows` tile rows.
template <typename T, typename Sink>
void inverse_2d(int version, Cx<T>* spectra, int tile_h, int tile_w, int64_t X, const Sink& sink, int rows,
                void* scratch) {
  check_version(version);
  check_transform_size(tile_h, "tile height");
  check_transform_size(tile_w, "tile width");
#if defined(__CUDACC__)
  if (version == 3) return cufft_inverse<T>(spectra, tile_h, tile_w, X, sink, rows, scratch);
#endif
  (void)scratch;
  if (version == 4) {
    const FusedPlan plan = fused_plan<T>(tile_h, tile_w, X, rows);
    if (plan.pairs > 0) return fused_inverse<T>(plan, sink, spectra);
  }
  const int bins = tile_w / 2 + 1;
  strided_fft<T>(tile_h, bins * X, 1, bins * X, true, spectra);
  if (version == 2 || version == 4) {
    rows_inverse<T, true>(sink, tile_w, X, rows, spectra);
  } else {
    rows_inverse<T, false>(sink, tile_w, X, rows, spectra);
  }
}

}  // namespace

int conv2d_fft_version() {
  static const bool registered = [] {
    register_kernel_family({"conv2d_fft", 4, 4,
                            "v1 radix-2 Stockham FFT in shared memory, each real row as a complex signal; channel "
                            "sums one thread per output; "
                            "v2 two real rows per complex FFT (half the row transforms); channel sums as a "
                            "shared-memory tiled complex GEMM; "
                            "v3 cuFFT transforms with v2's GEMM (cuda backend only); "
                            "v4 each 2-D transform fused in one block (rows and columns in shared memory, the "
                            "spectra written once); channel sums with 4x4 register tiles of a 64x64 block tile"});
    return true;
  }();
  (void)registered;
  return kernel_version("conv2d_fft");
}

bool fft_transform_fused(DType dtype, int tile_h, int tile_w) {
  check_transform_size(tile_h, "tile height");
  check_transform_size(tile_w, "tile width");
  bool fused = false;
  dispatch_floating(dtype, "conv2d_fft", [&](auto tag) {
    fused = fused_plan<decltype(tag)>(tile_h, tile_w, 1, tile_h).pairs > 0;
  });
  return fused;
}

bool conv2d_fft_version_available(int version, std::string* why) {
  if (version == 1 || version == 2 || version == 4) return true;
  if (version == 3) {
#if defined(__CUDACC__)
    return true;
#else
    if (why)
      *why =
          "conv2d_fft v3 is cuFFT, which only the cuda backend uses; the sim backend never calls vendor libraries "
          "and runs our own FFT (versions 1, 2 and 4): set_kernel_version(\"conv2d_fft\", 2) or "
          "CONVKIT_KERNEL_CONV2D_FFT=2";
    return false;
#endif
  }
  if (why) *why = detail::concat("conv2d_fft: no version ", version, " (versions are 1 to 4)");
  return false;
}

std::size_t fft_transform_scratch_bytes(int version, DType dtype, int tile_h, int tile_w, std::int64_t batch) {
  check_version(version);
  if (version != 3) return 0;
  std::size_t bytes = 0;
#if defined(__CUDACC__)
  dispatch_floating(dtype, "conv2d_fft", [&](auto tag) {
    bytes = cufft_scratch_bytes<decltype(tag)>(tile_h, tile_w, batch);
  });
#else
  (void)dtype, (void)tile_h, (void)tile_w, (void)batch;
#endif
  return bytes;
}

void launch_fft_tiles_forward(int version, DType dtype, const FftTileSource& s, int tile_h, int tile_w,
                              void* spectra, void* scratch) {
  dispatch_floating(dtype, "conv2d_fft", [&](auto tag) {
    using T = decltype(tag);
    const TileRows<T> src{static_cast<const T*>(s.planes), s.channels, s.plane_h, s.plane_w, s.step_h, s.step_w,
                          s.offset_h, s.offset_w, s.size_h, s.size_w, s.tiles_w, s.tiles_per_image, s.n0, s.M};
    forward_2d<T>(version, src, tile_h, tile_w, s.channels * s.M, static_cast<Cx<T>*>(spectra), scratch);
  });
}

void launch_fft_filters_forward(int version, DType dtype, const FftFilterSource& s, int tile_h, int tile_w,
                                void* spectra, void* scratch) {
  dispatch_floating(dtype, "conv2d_fft", [&](auto tag) {
    using T = decltype(tag);
    const FilterRows<T> src{static_cast<const T*>(s.w), s.O, s.I, s.R, s.S, s.dil_h, s.dil_w, s.flip, s.Cg, s.Kg};
    forward_2d<T>(version, src, tile_h, tile_w, static_cast<int64_t>(s.O) * s.I, static_cast<Cx<T>*>(spectra),
                  scratch);
  });
}

void launch_fft_tiles_inverse(int version, DType dtype, void* spectra, int tile_h, int tile_w,
                              const FftTileSink& s, void* scratch) {
  dispatch_floating(dtype, "conv2d_fft", [&](auto tag) {
    using T = decltype(tag);
    const TileOut<T> sink{static_cast<T*>(s.out), static_cast<const T*>(s.bias), s.O, s.P, s.Q, s.out_h, s.out_w,
                          s.tiles_w, s.tiles_per_image, s.n0, s.M, static_cast<T>(s.scale)};
    inverse_2d<T>(version, static_cast<Cx<T>*>(spectra), tile_h, tile_w, s.O * s.M, sink, s.out_h, scratch);
  });
}

void launch_fft_filters_inverse(int version, DType dtype, void* spectra, int tile_h, int tile_w, std::int64_t batch,
                                const FftFilterSink& s, void* scratch) {
  dispatch_floating(dtype, "conv2d_fft", [&](auto tag) {
    using T = decltype(tag);
    const FilterOut<T> sink{static_cast<T*>(s.dw), s.R, s.S, s.dil_h, s.dil_w, static_cast<T>(s.scale)};
    inverse_2d<T>(version, static_cast<Cx<T>*>(spectra), tile_h, tile_w, batch, sink, s.R, scratch);
  });
}

void launch_spectral_gemm(int version, DType dtype, const SpectralGemm& s) {
  check_version(version);
  dispatch_floating(dtype, "conv2d_fft", [&](auto tag) {
    using T = decltype(tag);
    const GemmArgs<T> g{static_cast<const Cx<T>*>(s.a), static_cast<const Cx<T>*>(s.b), static_cast<Cx<T>*>(s.c),
                        s.F, s.groups, s.rows, s.cols, s.depth, s.a_f, s.a_g, s.a_r, s.a_k, s.b_f, s.b_g, s.b_k,
                        s.b_c, s.c_f, s.c_g, s.c_r, s.c_c, s.conj_a, s.accumulate};
    if (version == 1) {
      const LaunchShape shape =
          grid_stride_shape(static_cast<int64_t>(s.F) * s.groups * s.rows * s.cols, 256, 65535);
      launch(spectral_gemm_naive<T>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr, g);
      return;
    }
    if (version == 4 && s.rows > 32 && s.cols > 32 && gemm_blocks<kRegisterTile>(s) >= kRegisterTileMinBlocks) {
      launch_gemm_tiled<T, kRegisterTile, 4>(g);
    } else if (s.rows <= 16 || s.cols <= 16) {
      launch_gemm_tiled<T, 16, 2>(g);
    } else {
      launch_gemm_tiled<T, 32, 2>(g);
    }
  });
}

void launch_fft_1d(DType dtype, void* data, int n, std::int64_t count, bool inverse) {
  check_transform_size(n, "length");
  dispatch_floating(dtype, "fft", [&](auto tag) {
    using T = decltype(tag);
    strided_fft<T>(n, count, n, 1, inverse, static_cast<Cx<T>*>(data));
  });
}

void launch_rfft2d(int version, DType dtype, const void* tiles, int tile_h, int tile_w, std::int64_t count,
                   void* spectra, void* scratch) {
  dispatch_floating(dtype, "rfft2d", [&](auto tag) {
    using T = decltype(tag);
    const ContiguousRows<T> src{static_cast<const T*>(tiles), tile_h, tile_w};
    forward_2d<T>(version, src, tile_h, tile_w, count, static_cast<Cx<T>*>(spectra), scratch);
  });
}

void launch_irfft2d(int version, DType dtype, void* spectra, int tile_h, int tile_w, std::int64_t count, void* tiles,
                    void* scratch) {
  dispatch_floating(dtype, "irfft2d", [&](auto tag) {
    using T = decltype(tag);
    const ContiguousOut<T> sink{static_cast<T*>(tiles), tile_h, tile_w};
    inverse_2d<T>(version, static_cast<Cx<T>*>(spectra), tile_h, tile_w, count, sink, tile_h, scratch);
  });
}

}  // namespace convkit::CK_GPU_NS
