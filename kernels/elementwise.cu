// Elementwise kernels: fill, unary and binary maps, where, and the factories
// (arange and the Philox draws).
//
// Mapping: one grid-stride loop; thread t of the grid handles elements
// t, t + T, t + 2T, ... (T = threads in the grid), so consecutive threads touch
// consecutive elements and contiguous loads coalesce. Strided and broadcast
// operands go through StridedView::offset. The floor is memory traffic: an op
// over n elements moves (inputs + 1) * n * sizeof(T) bytes and does O(n) flops.
//
// The unary and binary maps come in two versions (family "elementwise"):
// v1 the loop above, for any layout: the simple twin.
// v2 for contiguous operands that are 16-byte aligned: 16 bytes per thread
//    per step (a float4, or two doubles) through one vector load or store per
//    operand, a quarter of v1's memory instructions for float32; the last
//    n % 4 (n % 2) elements take v1's scalar rule. A binary operand that is
//    one value broadcast to every element (all strides 0: x + 1.5 as a
//    tensor, a loss scale) is read once per thread instead of once per
//    element: the broadcast fast path. Anything else (strided views,
//    row broadcasts, an odd offset) runs v1. Both versions compute each
//    element with the same inline function, so they agree bit for bit.
#include "convkit/backend/elementwise_math.h"
#include "convkit/backend/kernel_versions.h"
#include "convkit/core/philox.h"
#include "kernels/dispatch.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/vector_access.cuh"

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

// ---- v2: 16-byte packs over contiguous operands. No __restrict__: in-place
// ops (x.add_(y), relu_) pass out == x.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / static_cast<int>(sizeof(T));
  T v[kSize];
};

// One 16-byte access each way. nvcc turns the aligned struct copy into one
// ld/st.global.v4; g++ (sim) would copy the four lanes one by one once they
// sit in separate registers, so there a 16-byte memcpy keeps the access whole
// and the sim counters see what the GPU issues.
template <typename T>
__device__ __forceinline__ Pack<T> load_pack(const T* p, std::int64_t i) {
#if defined(__CUDACC__)
  return reinterpret_cast<const Pack<T>*>(p)[i];
#else
  Pack<T> v;
  __builtin_memcpy(&v, p + i * Pack<T>::kSize, sizeof v);
  return v;
#endif
}
template <typename T>
__device__ __forceinline__ void store_pack(T* p, std::int64_t i, const Pack<T>& v) {
#if defined(__CUDACC__)
  reinterpret_cast<Pack<T>*>(p)[i] = v;
#else
  __builtin_memcpy(p + i * Pack<T>::kSize, &v, sizeof v);
#endif
}

template <typename T>
__global__ void unary_v2_packs(UnaryOp op, const T* x, T* out, std::int64_t n, T a,
                               T b) {
  using P = Pack<T>;
  const std::int64_t packs = n / P::kSize;
  for (std::int64_t i = grid_start(); i < packs; i += grid_step()) {
    P v = load_pack(x, i);
    CK_UNROLL for (int k = 0; k < P::kSize; ++k) v.v[k] = elementwise_math::unary_value(op, v.v[k], a, b);
    store_pack(out, i, v);
  }
  for (std::int64_t i = packs * P::kSize + grid_start(); i < n; i += grid_step())
    out[i] = elementwise_math::unary_value(op, x[i], a, b);
}

// An operand is either contiguous (a pack per step) or one broadcast value.
template <typename T>
struct PackOperand {
  const T* p;
  bool scalar;
  __device__ __forceinline__ Pack<T> pack(std::int64_t i, T value) const {
    Pack<T> v;
    if (scalar) {
      CK_UNROLL for (int k = 0; k < Pack<T>::kSize; ++k) v.v[k] = value;
    } else {
      v = load_pack(p, i);
    }
    return v;
  }
};

template <typename T>
__global__ void binary_v2_packs(BinaryOp op, PackOperand<T> a, PackOperand<T> b, T* out,
                                std::int64_t n) {
  using P = Pack<T>;
  const std::int64_t packs = n / P::kSize;
  const T a0 = a.scalar ? a.p[0] : T(0), b0 = b.scalar ? b.p[0] : T(0);  // the broadcast values, read once
  for (std::int64_t i = grid_start(); i < packs; i += grid_step()) {
    const P av = a.pack(i, a0), bv = b.pack(i, b0);
    P v;
    CK_UNROLL for (int k = 0; k < P::kSize; ++k) v.v[k] = elementwise_math::binary_value(op, av.v[k], bv.v[k]);
    store_pack(out, i, v);
  }
  for (std::int64_t i = packs * P::kSize + grid_start(); i < n; i += grid_step())
    out[i] = elementwise_math::binary_value(op, a.scalar ? a0 : a.p[i], b.scalar ? b0 : b.p[i]);
}

using dev::aligned16;

// Every stride 0: one value seen at every index.
bool broadcast_scalar(const StridedView& v) {
  for (int d = 0; d < v.rank; ++d)
    if (v.stride[d] != 0 && v.size[d] != 1) return false;
  return true;
}

int elementwise_version() {
  register_elementwise_kernels();
  return kernel_version("elementwise");
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

// fma, not a * b + c: the CPU backend computes the same fused, correctly
// rounded value whatever contraction each compiler chooses (philox.h).
template <typename T>
__global__ void uniform_kernel(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                               double lo, double hi) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step())
    out[i] = static_cast<T>(fma(hi - lo, double(philox::uniform(seed, offset, static_cast<std::uint64_t>(i))), lo));
}

template <typename T>
__global__ void normal_kernel(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                              double mean, double std) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step())
    out[i] = static_cast<T>(fma(std, double(philox::normal(seed, offset, static_cast<std::uint64_t>(i))), mean));
}

}  // namespace

void register_elementwise_kernels() {
  static const bool registered = [] {
    register_kernel_family({"elementwise", 2, 2,
                            "v1 one element per thread, any layout; "
                            "v2 16-byte packs for contiguous aligned operands, a broadcast scalar read once"});
    return true;
  }();
  (void)registered;
}

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
    if (elementwise_version() == 2 && xv.contiguous && ov.contiguous && aligned16(x) && aligned16(out)) {
      const LaunchShape p = grid_stride_shape((n + Pack<T>::kSize - 1) / Pack<T>::kSize);
      launch(unary_v2_packs<T>, dim3(p.blocks), dim3(p.threads), 0, nullptr, op, static_cast<const T*>(x),
             static_cast<T*>(out), n, static_cast<T>(a), static_cast<T>(b));
      return;
    }
    launch(unary_kernel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, op, static_cast<const T*>(x), xv,
           static_cast<T*>(out), ov, n, static_cast<T>(a), static_cast<T>(b));
  });
}

void launch_binary(BinaryOp op, DType dtype, const void* a, const StridedView& av, const void* b,
                   const StridedView& bv, void* out, const StridedView& ov, std::int64_t n) {
  const LaunchShape s = grid_stride_shape(n);
  dispatch_floating(dtype, "binary", [&](auto t) {
    using T = decltype(t);
    const bool a_scalar = !av.contiguous && broadcast_scalar(av), b_scalar = !bv.contiguous && broadcast_scalar(bv);
    const bool a_ok = a_scalar || (av.contiguous && aligned16(a)), b_ok = b_scalar || (bv.contiguous && aligned16(b));
    if (elementwise_version() == 2 && ov.contiguous && aligned16(out) && a_ok && b_ok && n > 0) {
      const LaunchShape p = grid_stride_shape((n + Pack<T>::kSize - 1) / Pack<T>::kSize);
      launch(binary_v2_packs<T>, dim3(p.blocks), dim3(p.threads), 0, nullptr, op,
             PackOperand<T>{static_cast<const T*>(a), a_scalar}, PackOperand<T>{static_cast<const T*>(b), b_scalar},
             static_cast<T*>(out), n);
      return;
    }
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
