#pragma once
// The three passes of the implicit-GEMM convolution as GEMM problems, shared
// by the strict kernels (kernels/conv2d_implicit_gemm.cu) and the tensor-core
// ones (kernels/conv2d_implicit_gemm_tensor_core.cu): what A(m, k) and
// B(k, col) are for each pass, gathered from x, w or dy on demand, where a
// result (m, col) goes, the stride phases of backward-data and the
// deterministic split-K of backward-weights. The table of the products and
// why each pass gathers what it does are at the head of
// conv2d_implicit_gemm.cu.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/dtype.h"
#include "convkit/core/error.h"
#include "convkit/sim/cuda_compat.h"
#include "kernels/tensor_view.cuh"

namespace convkit::CK_GPU_NS::implicit_gemm {

// The block tile of the tiled versions (strict version 3, tensor-core
// version 2): 64 x 64 outputs, K consumed 32 at a time. The split-K of
// backward-weights cuts K into whole K-steps of it.
inline constexpr int kGemmTileM = 64, kGemmTileN = 64, kGemmTileK = 32;
struct Geometry {
  int N, C, H, W, K, R, S, P, Q;
  int sh, sw, pt, pl, dh, dw;
  int Cg, Kg, RS, PQ, HW;
};

inline Geometry geometry(const Conv2dDesc& d) {
  const auto i = [](std::int64_t v) { return static_cast<int>(v); };
  return {i(d.N),          i(d.C),          i(d.H),       i(d.W),        i(d.K),
          i(d.R),          i(d.S),          i(d.P()),     i(d.Q()),      i(d.stride_h),
          i(d.stride_w),   i(d.pad_top),    i(d.pad_left), i(d.dilation_h), i(d.dilation_w),
          i(d.C_per_group()), i(d.K_per_group()), i(d.R * d.S), i(d.P() * d.Q()), i(d.H * d.W)};
}

// x[n][c][h][w] seen through tap (r, s) from output (p, q); 0 in the padding.
template <typename T>
__device__ __forceinline__ T gather_image(const T* x, const Geometry& g, int n, int c, int p, int q, int r, int s) {
  const int h = p * g.sh - g.pt + r * g.dh;
  const int w = q * g.sw - g.pl + s * g.dw;
  return (h >= 0 && h < g.H && w >= 0 && w < g.W) ? x[((n * g.C + c) * g.H + h) * g.W + w] : T(0);
}

// Each problem says, for group grp, what A(m, k) and B(k, col) are and where
// result (m, col) goes; kBAlongK says which way B's contiguous dimension runs.

template <typename T>
struct ForwardProblem {
  static constexpr bool kBAlongK = false;
  Geometry g;
  const T* x;
  const T* w;
  const T* bias;  // may be null
  T* y;
  int M, cols, depth;

  __device__ __forceinline__ T a(int grp, int m, int k) const { return w[(grp * g.Kg + m) * depth + k]; }
  __device__ __forceinline__ T b(int grp, int k, int col) const {
    const int n = col / g.PQ, pq = col - n * g.PQ, p = pq / g.Q, q = pq - p * g.Q;
    const int c = k / g.RS, rs = k - c * g.RS, r = rs / g.S, s = rs - r * g.S;
    return gather_image(x, g, n, grp * g.Cg + c, p, q, r, s);
  }
  __device__ __forceinline__ void store(int grp, int m, int col, int, T acc) const {
    const int n = col / g.PQ, pq = col - n * g.PQ, k = grp * g.Kg + m;
    y[(n * g.K + k) * g.PQ + pq] = bias != nullptr ? acc + bias[k] : acc;
  }
};

// The output rows h of one stride phase, those with (h + pad) mod stride ==
// a, and the taps r that reach them: r*dil mod stride == a. Those taps are
// an arithmetic progression; at stride 1 the one phase holds every row and tap.
struct StridePhase {
  int first, count;               // rows first, first + stride, ... (count of them)
  int tap_first, tap_step, taps;  // taps tap_first, tap_first + tap_step, ... (taps of them)
};

template <typename T>
struct BackwardDataProblem {
  static constexpr bool kBAlongK = false;
  Geometry g;
  const T* dy;
  const T* w;
  const T* wt;  // w transposed per group to [g][c][kk*R*S + rs], or null: read w in place
  T* dx;
  StridePhase ph, pw;  // this launch's phase along h and along w
  int M, cols, depth;  // cols = N * ph.count * pw.count, depth = Kg * ph.taps * pw.taps

  // k = (kk, jr, js): input channel kk, the jr-th and js-th taps of the phase.
  __device__ __forceinline__ void tap(int k, int& kk, int& r, int& s) const {
    const int per = ph.taps * pw.taps;
    kk = k / per;
    const int t = k - kk * per, jr = t / pw.taps, js = t - jr * pw.taps;
    r = ph.tap_first + jr * ph.tap_step;
    s = pw.tap_first + js * pw.tap_step;
  }
  // col = (n, i, j): image n, the i-th row and j-th column of the phase.
  __device__ __forceinline__ void pixel(int col, int& n, int& h, int& x) const {
    const int plane = ph.count * pw.count;
    n = col / plane;
    const int t = col - n * plane, i = t / pw.count;
    h = ph.first + i * g.sh;
    x = pw.first + (t - i * pw.count) * g.sw;
  }
  __device__ __forceinline__ T a(int grp, int c, int k) const {
    int kk, r, s;
    tap(k, kk, r, s);
    if (wt != nullptr) return wt[(grp * g.Cg + c) * g.Kg * g.RS + kk * g.RS + r * g.S + s];
    return w[((grp * g.Kg + kk) * g.Cg + c) * g.RS + r * g.S + s];
  }
  __device__ __forceinline__ T b(int grp, int k, int col) const {
    int n, h, x, kk, r, s;
    pixel(col, n, h, x);
    tap(k, kk, r, s);
    // The phase makes both exact multiples of the stride: p * sh and q * sw.
    const int hp = h + g.pt - r * g.dh, wp = x + g.pl - s * g.dw;
    if (hp < 0 || wp < 0) return T(0);
    const int p = hp / g.sh, q = wp / g.sw;
    return (p < g.P && q < g.Q) ? dy[((n * g.K + grp * g.Kg + kk) * g.P + p) * g.Q + q] : T(0);
  }
  __device__ __forceinline__ void store(int grp, int c, int col, int, T acc) const {
    int n, h, x;
    pixel(col, n, h, x);
    dx[((n * g.C + grp * g.Cg + c) * g.H + h) * g.W + x] = acc;
  }
};

template <typename T>
struct BackwardWeightsProblem {
  static constexpr bool kBAlongK = true;
  Geometry g;
  const T* x;
  const T* dy;
  T* out;             // dw, or the split-K partials
  int slice_stride;   // elements between slices' partials (0: one slice, out is dw)
  int M, cols, depth;  // depth = N*P*Q, the sum over images and positions

  __device__ __forceinline__ T a(int grp, int m, int j) const {
    const int n = j / g.PQ, pq = j - n * g.PQ;
    return dy[(n * g.K + grp * g.Kg + m) * g.PQ + pq];
  }
  __device__ __forceinline__ T b(int grp, int j, int col) const {
    const int n = j / g.PQ, pq = j - n * g.PQ, p = pq / g.Q, q = pq - p * g.Q;
    const int c = col / g.RS, rs = col - c * g.RS, r = rs / g.S, s = rs - r * g.S;
    return gather_image(x, g, n, grp * g.Cg + c, p, q, r, s);
  }
  __device__ __forceinline__ void store(int grp, int m, int col, int slice, T acc) const {
    out[slice * slice_stride + (grp * g.Kg + m) * cols + col] = acc;
  }
};

// wt[(grp*Cg + c)*Kg*R*S + kk*R*S + rs] = w[((grp*Kg + kk)*Cg + c)*R*S + rs]:
// backward-data's A made row-major. One thread per element of wt, so the
// stores coalesce; the loads run R*S long.
template <typename T>
__global__ void transpose_filter_kernel(const T* __restrict__ w, T* __restrict__ wt, Geometry g, int total) {
  const int row_len = g.Kg * g.RS;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int row = i / row_len, k = i - row * row_len;  // row = grp*Cg + c
    const int grp = row / g.Cg, c = row - grp * g.Cg;
    const int kk = k / g.RS, rs = k - kk * g.RS;
    wt[i] = w[((grp * g.Kg + kk) * g.Cg + c) * g.RS + rs];
  }
}

// ---- Host side.

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The most elements a tensor or a product column may have: 32-bit indices,
// with room above for what the kernels compute past an index before they
// test it (a depth rounded up to a K-step, k_end + kTileK - 1; a tile's
// first row plus its height; a grid-stride loop's last step, up to 1024
// blocks of 256 threads), so that none of it wraps.
inline constexpr std::int64_t kIndexHeadroom = std::int64_t{1} << 20;
inline constexpr std::int64_t kIndexLimit = std::numeric_limits<int>::max() - kIndexHeadroom;
inline constexpr std::int64_t kMaxGridY = 65535;

// Empty when the tiled kernels of either family can index `d` (a valid
// descriptor, every tensor and product column within kIndexLimit, the groups
// within the grid's y limit), else why not; `op` names the family.
inline std::string index_limits_reason(const Conv2dDesc& d, const char* op) {
  try {
    d.validate(op);
  } catch (const Error& e) {
    return e.what();
  }
  const std::int64_t largest = std::max({d.N * d.C * d.H * d.W, d.N * d.K * d.P() * d.Q(),
                                         d.K * d.C_per_group() * d.R * d.S, d.N * d.P() * d.Q(), d.N * d.H * d.W});
  if (largest > kIndexLimit)
    return detail::concat("a tensor of ", largest, " elements needs 64-bit indices (the kernels index with 32 bits)");
  if (d.groups > kMaxGridY) return detail::concat(d.groups, " groups exceed the grid's y limit of ", kMaxGridY);
  return {};
}
// Enough blocks for two per SM on a 132-SM GPU: backward-weights splits K
// until its tiles times slices reach this, or its slices get shorter than
// kMinSliceLen.
inline constexpr std::int64_t kTargetBlocks = kTwoBlocksPerSm;
inline constexpr std::int64_t kMinSliceLen = 16 * kGemmTileK;
inline constexpr std::int64_t kMaxSlices = 32;
// Version 5's cap (kernels/conv2d_implicit_gemm_pipelined.cuh says why).
inline constexpr std::int64_t kMaxPipelinedSlices = 256;

// The split of backward-weights' K: slice length (a multiple of kTileK) and count.
struct Split {
  int slices = 1;
  int len = 0;
};

// k_total: the K the slices cut, N*P*Q for versions 3 and 5, version 4's
// K-steps times kTileK (each image's positions rounded up to whole steps).
inline Split weight_split(DType dtype, const Conv2dDesc& d, std::int64_t k_total,
                          std::int64_t max_slices = kMaxSlices) {
  const std::int64_t depth = d.C_per_group() * d.R * d.S;
  const std::int64_t tiles =
      ceil_div(d.K_per_group(), kGemmTileM) * ceil_div(depth, kGemmTileN) * d.groups;
  // The partials are indexed with 32 bits too.
  const std::int64_t index_cap = kIndexLimit / std::max<std::int64_t>(d.K * depth, 1);
  std::int64_t slices =
      std::min({ceil_div(kTargetBlocks, tiles), k_total / kMinSliceLen, max_slices, index_cap});
  const std::size_t per_slice = static_cast<std::size_t>(d.K * depth) * dtype_size(dtype);
  while (slices > 1 && static_cast<std::size_t>(slices) * per_slice > d.workspace_limit) --slices;
  slices = std::max<std::int64_t>(slices, 1);
  Split s;
  s.len = static_cast<int>(ceil_div(ceil_div(k_total, slices), kGemmTileK) * kGemmTileK);
  s.slices = static_cast<int>(ceil_div(k_total, std::max(s.len, 1)));  // no empty slice
  if (k_total == 0) s.slices = 1;
  return s;
}

inline StridePhase stride_phase(int a, int stride, int pad, int dil, int taps, int extent) {
  StridePhase ph{};
  ph.first = ((a - pad) % stride + stride) % stride;
  ph.count = ph.first < extent ? (extent - ph.first + stride - 1) / stride : 0;
  ph.tap_step = 1;
  for (int r = 0; r < taps; ++r) {
    if (r * dil % stride != a) continue;
    if (ph.taps == 0) ph.tap_first = r;
    if (ph.taps == 1) ph.tap_step = r - ph.tap_first;
    ++ph.taps;
  }
  return ph;
}

inline bool transposes_filter(DType dtype, const Conv2dDesc& d) {
  return static_cast<std::size_t>(d.K * d.C_per_group() * d.R * d.S) * dtype_size(dtype) <= d.workspace_limit;
}

// The workspace of a tiled pass: backward-data's transposed filter (when it
// fits), backward-weights' split-K partials (`split`'s slices of the filter).
inline std::size_t tiled_workspace_bytes(DType dtype, const Conv2dDesc& d, ConvPass pass, const Split& split) {
  const std::size_t filter = static_cast<std::size_t>(d.K * d.C_per_group() * d.R * d.S) * dtype_size(dtype);
  switch (pass) {
    case ConvPass::forward: return 0;
    case ConvPass::backward_data: return transposes_filter(dtype, d) ? filter : 0;
    case ConvPass::backward_weights: return split.slices > 1 ? static_cast<std::size_t>(split.slices) * filter : 0;
  }
  return 0;
}

}  // namespace convkit::CK_GPU_NS::implicit_gemm
