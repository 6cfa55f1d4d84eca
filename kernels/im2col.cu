// The data movement around the GEMMs of the im2col+GEMM convolution: im2col,
// its adjoint col2im, and the two small sums that convolution needs (the bias
// gradient, and adding up backward-weights' per-slot partial results).
//
// All of these are memory-bound: a few integer operations per element and no
// reuse to exploit, so the floor is bytes moved, and the design goal is that
// every byte moves once, coalesced.
//
// im2col (v1, the only version): one thread per column-matrix element, in a
// grid-stride loop over the flat index of col. Consecutive threads write
// consecutive q, so stores coalesce; loads of one row of x coalesce too when
// stride_w is 1 (otherwise they are strided by stride_w, unavoidably). Floor:
// images*C*R*S*P*Q elements written + images*C*H*W read (each input pixel is
// read R*S/(sh*sw) times, mostly from L1/L2). No shared memory: there is no
// reuse within a block worth staging.
//
// col2im (v1, the only version): one thread per element of dx, which gathers
// the at most R*S column entries that im2col copied from it. The obvious
// alternative, one thread per column entry doing atomicAdd into dx, needs dx
// zeroed first, serialises on contended addresses (every pixel is hit up to
// R*S times), and sums in a run-dependent order, so results would differ
// from run to run. The gather writes each dx element exactly once with a
// plain store, reads each column entry exactly once, and is deterministic:
// it is already the good design, so there is one version. Floor: the column
// matrix read once + dx written once.
//
// Index arithmetic uses 32-bit integers whenever every index fits (the
// common case): 64-bit division and remainder cost several times more on a
// GPU, and this kernel does five of each per element.
#include <algorithm>
#include <cstdint>

#include "convkit/backend/kernel_versions.h"
#include "kernels/dispatch.cuh"
#include "kernels/im2col.cuh"
#include "kernels/tensor_view.cuh"

namespace convkit::CK_GPU_NS {

namespace {

template <typename I>
struct Geometry {
  I C, H, W, R, S, P, Q;
  I stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
};

template <typename I>
Geometry<I> geometry(const Conv2dDesc& d) {
  return {static_cast<I>(d.C),        static_cast<I>(d.H),        static_cast<I>(d.W),
          static_cast<I>(d.R),        static_cast<I>(d.S),        static_cast<I>(d.P()),
          static_cast<I>(d.Q()),      static_cast<I>(d.stride_h), static_cast<I>(d.stride_w),
          static_cast<I>(d.pad_top),  static_cast<I>(d.pad_left), static_cast<I>(d.dilation_h),
          static_cast<I>(d.dilation_w)};
}

template <typename I>
__device__ __forceinline__ I grid_start() {
  return static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
}
template <typename I>
__device__ __forceinline__ I grid_step() {
  return static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
}

template <typename T, typename I>
__global__ void im2col_kernel(const T* __restrict__ x, T* __restrict__ col, Geometry<I> g, I total) {
  for (I i = grid_start<I>(); i < total; i += grid_step<I>()) {
    I t = i;
    const I q = t % g.Q;
    t /= g.Q;
    const I p = t % g.P;
    t /= g.P;
    const I s = t % g.S;
    t /= g.S;
    const I r = t % g.R;
    t /= g.R;  // t = n * C + c: the input plane
    const I h = p * g.stride_h + r * g.dilation_h - g.pad_top;
    const I w = q * g.stride_w + s * g.dilation_w - g.pad_left;
    col[i] = (h >= 0 && h < g.H && w >= 0 && w < g.W) ? x[(t * g.H + h) * g.W + w] : T(0);
  }
}

// Output row p reads input row h through tap r when h = p*stride + r*dilation - pad;
// walking r upwards, h + pad - r*dilation only decreases, so the loop stops at
// the first negative value.
template <typename T, typename I>
__global__ void col2im_kernel(const T* __restrict__ col, T* __restrict__ dx, Geometry<I> g, I total) {
  const I plane = g.P * g.Q;
  for (I i = grid_start<I>(); i < total; i += grid_step<I>()) {
    I t = i;
    const I w = t % g.W;
    t /= g.W;
    const I h = t % g.H;
    t /= g.H;  // t = n * C + c
    const T* rows = col + t * g.R * g.S * plane;
    T sum = 0;
    for (I r = 0; r < g.R; ++r) {
      const I hp = h + g.pad_top - r * g.dilation_h;  // p * stride_h when tap r reaches h
      if (hp < 0) break;
      if (hp % g.stride_h != 0 || hp / g.stride_h >= g.P) continue;
      const I p = hp / g.stride_h;
      for (I s = 0; s < g.S; ++s) {
        const I wp = w + g.pad_left - s * g.dilation_w;
        if (wp < 0) break;
        if (wp % g.stride_w != 0 || wp / g.stride_w >= g.Q) continue;
        sum += rows[(r * g.S + s) * plane + p * g.Q + wp / g.stride_w];
      }
    }
    dx[i] = sum;
  }
}

template <typename T>
__global__ void bias_fill_kernel(const T* __restrict__ bias, T* __restrict__ y, std::int64_t K,
                                 std::int64_t plane, std::int64_t total) {
  for (std::int64_t i = grid_start<std::int64_t>(); i < total; i += grid_step<std::int64_t>())
    y[i] = bias[(i / plane) % K];
}

template <typename T>
__global__ void sum_slices_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t slices,
                                  std::int64_t n) {
  for (std::int64_t i = grid_start<std::int64_t>(); i < n; i += grid_step<std::int64_t>()) {
    T sum = in[i];
    for (std::int64_t s = 1; s < slices; ++s) sum += in[s * n + i];
    out[i] = sum;
  }
}

bool force_64_bit_indices = false;

// 32-bit indices when every flat index, plus a grid's worth of stride, fits.
bool fits_32_bits(std::int64_t largest) { return !force_64_bit_indices && largest < (std::int64_t{1} << 30); }

void check_geometry(const char* op, const Conv2dDesc& d, std::int64_t images, const void* in, const void* out) {
  d.validate(op);
  CK_CHECK(images >= 0, op, ": negative image count ", images);
  CK_CHECK(images == 0 || (in != nullptr && out != nullptr), op, ": null buffer for ", images, " images of ",
           d.str());
}

}  // namespace

void register_im2col_family() {
  static const bool registered = [] {
    register_kernel_family({"im2col", 1, 1,
                            "v1 im2col: one thread per column element; col2im: one thread per input element "
                            "gathering its R*S taps (no atomics, deterministic)"});
    return true;
  }();
  (void)registered;
}

void im2col_force_64_bit_indices(bool force) { force_64_bit_indices = force; }

void launch_im2col(DType dtype, const Conv2dDesc& d, const void* x, std::int64_t images, void* col) {
  register_im2col_family();
  check_geometry("im2col", d, images, x, col);
  const std::int64_t total = images * d.C * d.R * d.S * d.P() * d.Q();
  if (total == 0) return;
  const LaunchShape shape = grid_stride_shape(total);
  dispatch_floating(dtype, "im2col", [&](auto t) {
    using T = decltype(t);
    if (fits_32_bits(std::max(total, images * d.C * d.H * d.W)))
      launch(im2col_kernel<T, int>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr, static_cast<const T*>(x),
             static_cast<T*>(col), geometry<int>(d), static_cast<int>(total));
    else
      launch(im2col_kernel<T, std::int64_t>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr,
             static_cast<const T*>(x), static_cast<T*>(col), geometry<std::int64_t>(d), total);
  });
}

void launch_col2im(DType dtype, const Conv2dDesc& d, const void* col, std::int64_t images, void* dx) {
  register_im2col_family();
  check_geometry("col2im", d, images, col, dx);
  const std::int64_t total = images * d.C * d.H * d.W;
  if (total == 0) return;
  const LaunchShape shape = grid_stride_shape(total);
  dispatch_floating(dtype, "col2im", [&](auto t) {
    using T = decltype(t);
    if (fits_32_bits(std::max(total, images * d.C * d.R * d.S * d.P() * d.Q())))
      launch(col2im_kernel<T, int>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr,
             static_cast<const T*>(col), static_cast<T*>(dx), geometry<int>(d), static_cast<int>(total));
    else
      launch(col2im_kernel<T, std::int64_t>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr,
             static_cast<const T*>(col), static_cast<T*>(dx), geometry<std::int64_t>(d), total);
  });
}

void launch_bias_fill(DType dtype, const void* bias, std::int64_t images, std::int64_t K, std::int64_t plane,
                      void* y) {
  CK_CHECK(images >= 0 && K >= 0 && plane >= 0, "bias_fill: negative size (images ", images, ", K ", K,
           ", plane ", plane, ")");
  const std::int64_t total = images * K * plane;
  if (total == 0) return;
  CK_CHECK(bias != nullptr && y != nullptr, "bias_fill: null buffer");
  const LaunchShape shape = grid_stride_shape(total);
  dispatch_floating(dtype, "bias_fill", [&](auto t) {
    using T = decltype(t);
    launch(bias_fill_kernel<T>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr, static_cast<const T*>(bias),
           static_cast<T*>(y), K, plane, total);
  });
}

void launch_sum_slices(DType dtype, const void* in, std::int64_t slices, std::int64_t n, void* out) {
  CK_CHECK(slices >= 1 && n >= 0, "sum_slices: need at least one slice of n >= 0 elements, got ", slices,
           " slices of ", n);
  if (n == 0) return;
  CK_CHECK(in != nullptr && out != nullptr, "sum_slices: null buffer");
  const LaunchShape shape = grid_stride_shape(n);
  dispatch_floating(dtype, "sum_slices", [&](auto t) {
    using T = decltype(t);
    launch(sum_slices_kernel<T>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr, static_cast<const T*>(in),
           static_cast<T*>(out), slices, n);
  });
}

}  // namespace convkit::CK_GPU_NS
