// Elementwise kernels: fill, unary and binary maps, where, and the factories
// (arange and the Philox draws).
//
// Mapping: one grid-stride loop; thread t of the grid handles elements
// t, t + T, t + 2T, ... (T = threads in the grid), so consecutive threads touch
// consecutive elements and contiguous loads coalesce. Strided and broadcast
// operands go through StridedView::offset. The floor is memory traffic: an op
// over n elements moves (inputs + 1) * n * sizeof(T) bytes and does O(n) flops.
#include "convkit/backend/elementwise_math.h"
#include "convkit/core/philox.h"
#include "kernels/dispatch.cuh"
#include "kernels/elementwise.cuh"

namespace convkit::CK_GPU_NS {

namespace {

__device__ __forceinline__ std::int64_t grid_start() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_step() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

template <typename T>
__global__ void fill_kernel(T* out, StridedView ov, std::int64_t n, T value) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step()) out[ov.offset(i)] = value;
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, StridedView xv, T* out, StridedView ov,
                             std::int64_t n, T a, T b) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step())
    out[ov.offset(i)] = elementwise_math::unary_value(op, x[xv.offset(i)], a, b);
}

template <typename Tin, typename Tout>
__global__ void convert_kernel(const Tin* x, StridedView xv, Tout* out, StridedView ov, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step())
    out[ov.offset(i)] = static_cast<Tout>(x[xv.offset(i)]);
}

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, StridedView av, const T* b, StridedView bv,
                              T* out, StridedView ov, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step())
    out[ov.offset(i)] = elementwise_math::binary_value(op, a[av.offset(i)], b[bv.offset(i)]);
}

template <typename C, typename T>
__global__ void where_kernel(const C* cond, StridedView cv, const T* a, StridedView av, const T* b,
                             StridedView bv, T* out, StridedView ov, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step())
    out[ov.offset(i)] = cond[cv.offset(i)] != C(0) ? a[av.offset(i)] : b[bv.offset(i)];
}

template <typename T>
__global__ void arange_kernel(T* out, std::int64_t n, double start, double step) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step())
    out[i] = static_cast<T>(start + static_cast<double>(i) * step);
}

template <typename T>
__global__ void uniform_kernel(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                               double lo, double hi) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step())
    out[i] = static_cast<T>(lo + (hi - lo) * philox::uniform(seed, offset, static_cast<std::uint64_t>(i)));
}

template <typename T>
__global__ void normal_kernel(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                              double mean, double std) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step())
    out[i] = static_cast<T>(mean + std * philox::normal(seed, offset, static_cast<std::uint64_t>(i)));
}

}  // namespace

void launch_fill(DType dtype, void* out, const StridedView& ov, std::int64_t n, double value) {
  const LaunchShape s = grid_stride_shape(n);
  dispatch(dtype, [&](auto t) {
    using T = decltype(t);
    launch(fill_kernel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, static_cast<T*>(out), ov, n,
           static_cast<T>(value));
  });
}

void launch_unary(UnaryOp op, DType x_dtype, const void* x, const StridedView& xv, DType out_dtype,
                  void* out, const StridedView& ov, std::int64_t n, double a, double b) {
  const LaunchShape s = grid_stride_shape(n);
  if (op == UnaryOp::copy) {
    dispatch(x_dtype, [&](auto tin) {
      dispatch(out_dtype, [&](auto tout) {
        using Tin = decltype(tin);
        using Tout = decltype(tout);
        launch(convert_kernel<Tin, Tout>, dim3(s.blocks), dim3(s.threads), 0, nullptr,
               static_cast<const Tin*>(x), xv, static_cast<Tout*>(out), ov, n);
      });
    });
    return;
  }
  dispatch_floating(x_dtype, "unary", [&](auto t) {
    using T = decltype(t);
    launch(unary_kernel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, op, static_cast<const T*>(x), xv,
           static_cast<T*>(out), ov, n, static_cast<T>(a), static_cast<T>(b));
  });
}

void launch_binary(BinaryOp op, DType dtype, const void* a, const StridedView& av, const void* b,
                   const StridedView& bv, void* out, const StridedView& ov, std::int64_t n) {
  const LaunchShape s = grid_stride_shape(n);
  dispatch_floating(dtype, "binary", [&](auto t) {
    using T = decltype(t);
    launch(binary_kernel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, op, static_cast<const T*>(a), av,
           static_cast<const T*>(b), bv, static_cast<T*>(out), ov, n);
  });
}

void launch_where(DType cond_dtype, const void* cond, const StridedView& cv, DType dtype, const void* a,
                  const StridedView& av, const void* b, const StridedView& bv, void* out,
                  const StridedView& ov, std::int64_t n) {
  const LaunchShape s = grid_stride_shape(n);
  dispatch(cond_dtype, [&](auto c) {
    dispatch_floating(dtype, "where", [&](auto t) {
      using C = decltype(c);
      using T = decltype(t);
      launch(where_kernel<C, T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, static_cast<const C*>(cond), cv,
             static_cast<const T*>(a), av, static_cast<const T*>(b), bv, static_cast<T*>(out), ov, n);
    });
  });
}

void launch_arange(DType dtype, void* out, std::int64_t n, double start, double step) {
  const LaunchShape s = grid_stride_shape(n);
  dispatch(dtype, [&](auto t) {
    using T = decltype(t);
    launch(arange_kernel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, static_cast<T*>(out), n, start, step);
  });
}

void launch_uniform(DType dtype, void* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                    double lo, double hi) {
  const LaunchShape s = grid_stride_shape(n);
  dispatch_floating(dtype, "uniform", [&](auto t) {
    using T = decltype(t);
    launch(uniform_kernel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, static_cast<T*>(out), n, seed,
           offset, lo, hi);
  });
}

void launch_normal(DType dtype, void* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                   double mean, double std) {
  const LaunchShape s = grid_stride_shape(n);
  dispatch_floating(dtype, "normal", [&](auto t) {
    using T = decltype(t);
    launch(normal_kernel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, static_cast<T*>(out), n, seed,
           offset, mean, std);
  });
}

}  // namespace convkit::CK_GPU_NS
