// Elementwise kernels of the cpu backend: one StridedLoop per op, over the
// formulas the GPU kernels use too (convkit/backend/elementwise_math.h). The
// op is a compile-time constant inside each loop, so every inner loop is a
// plain, vectorisable function of its operands.
#include <cmath>

#include "convkit/backend/elementwise_math.h"
#include "convkit/core/philox.h"
#include "cpu/cpu_backend.h"
#include "cpu/philox_lanes.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

namespace {

// out[i] = f(x[i]) over two operands of types Tin and Tout.
template <typename Tin, typename Tout, typename F>
void map1(const Tensor& x, const Tensor& out, F f) {
  StridedLoop<2> loop({&out, &x});
  loop.run([&](const std::array<char*, 2>& p, const std::array<std::int64_t, 2>& s, std::int64_t n) {
    auto* o = reinterpret_cast<Tout*>(p[0]);
    const auto* a = reinterpret_cast<const Tin*>(p[1]);
    if (s[0] == sizeof(Tout) && s[1] == sizeof(Tin)) {
      for (std::int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
    } else {
      const std::int64_t so = s[0] / static_cast<std::int64_t>(sizeof(Tout));
      const std::int64_t sa = s[1] / static_cast<std::int64_t>(sizeof(Tin));
      for (std::int64_t i = 0; i < n; ++i) o[i * so] = f(a[i * sa]);
    }
  });
}

template <typename T, typename F>
void map2(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  StridedLoop<3> loop({&out, &a, &b});
  loop.run([&](const std::array<char*, 3>& p, const std::array<std::int64_t, 3>& s, std::int64_t n) {
    auto* o = reinterpret_cast<T*>(p[0]);
    const auto* x = reinterpret_cast<const T*>(p[1]);
    const auto* y = reinterpret_cast<const T*>(p[2]);
    constexpr auto e = static_cast<std::int64_t>(sizeof(T));
    if (s[0] == e && s[1] == e && s[2] == e) {
      for (std::int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (s[0] == e && s[1] == e && s[2] == 0) {  // tensor op broadcast scalar row
      const T yv = y[0];
      for (std::int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i * s[0] / e] = f(x[i * s[1] / e], y[i * s[2] / e]);
    }
  });
}

template <typename T>
void unary_typed(UnaryOp op, const Tensor& x, const Tensor& out, T a, T b) {
  elementwise_math::with_unary_op(op, [&]<UnaryOp Op>() {
    if constexpr (Op == UnaryOp::pow_scalar) {  // hoist the square's shortcut out of the loop
      if (a == T(2)) return map1<T, T>(x, out, [](T v) { return v * v; });
    }
    map1<T, T>(x, out, [a, b](T v) { return elementwise_math::unary_value(Op, v, a, b); });
  });
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  elementwise_math::with_binary_op(op, [&]<BinaryOp Op>() {
    map2<T>(a, b, out, [](T x, T y) { return elementwise_math::binary_value(Op, x, y); });
  });
}

}  // namespace

void CpuBackend::fill(const Tensor& out, double value) {
  dispatch_all(out.dtype(), [&]<typename T>() {
    StridedLoop<1> loop({&out});
    loop.run([&](const std::array<char*, 1>& p, const std::array<std::int64_t, 1>& s, std::int64_t n) {
      auto* o = reinterpret_cast<T*>(p[0]);
      const std::int64_t so = s[0] / static_cast<std::int64_t>(sizeof(T));
      for (std::int64_t i = 0; i < n; ++i) o[i * so] = static_cast<T>(value);
    });
  });
}

void CpuBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double a, double b) {
  if (op == UnaryOp::copy && x.dtype() != out.dtype()) {  // conversion between any dtypes
    dispatch_all(x.dtype(), [&]<typename Tin>() {
      dispatch_all(out.dtype(), [&]<typename Tout>() {
        map1<Tin, Tout>(x, out, [](Tin v) { return static_cast<Tout>(v); });
      });
    });
    return;
  }
  if (op == UnaryOp::copy && x.dtype() == DType::int64) {
    map1<std::int64_t, std::int64_t>(x, out, [](std::int64_t v) { return v; });
    return;
  }
  dispatch_floating(x.dtype(), "unary", [&]<typename T>() {
    unary_typed<T>(op, x, out, static_cast<T>(a), static_cast<T>(b));
  });
}

void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_floating(a.dtype(), "binary", [&]<typename T>() { binary_typed<T>(op, a, b, out); });
}

void CpuBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_floating(a.dtype(), "where", [&]<typename T>() {
    dispatch_all(cond.dtype(), [&]<typename C>() {
      StridedLoop<4> loop({&out, &cond, &a, &b});
      loop.run([&](const std::array<char*, 4>& p, const std::array<std::int64_t, 4>& s,
                   std::int64_t n) {
        for (std::int64_t i = 0; i < n; ++i) {
          const C c = *reinterpret_cast<const C*>(p[1] + i * s[1]);
          *reinterpret_cast<T*>(p[0] + i * s[0]) =
              c != C(0) ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                        : *reinterpret_cast<const T*>(p[3] + i * s[3]);
        }
      });
    });
  });
}

void CpuBackend::arange(const Tensor& out, double start, double step) {
  dispatch_all(out.dtype(), [&]<typename T>() {
    T* o = static_cast<T*>(out.raw_data());
    for (std::int64_t i = 0; i < out.numel(); ++i)
      o[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
}

void CpuBackend::uniform(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double lo,
                         double hi) {
  dispatch_floating(out.dtype(), "uniform", [&]<typename T>() {
    T* o = static_cast<T*>(out.raw_data());
    // Element for element what philox::uniform(seed, offset, i) gives.
    for_each_philox_group(seed, offset, static_cast<std::uint64_t>(out.numel()), 65536,
                          [&](const std::uint32_t* words, std::uint64_t first, std::uint64_t begin, std::uint64_t end) {
                            for (std::uint64_t e = begin; e < end; ++e)
                              o[e - offset] = static_cast<T>(std::fma(hi - lo, double(philox::to_unit_float(words[e - first])), lo));
                          });
  });
}

void CpuBackend::normal(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double mean,
                        double std) {
  dispatch_floating(out.dtype(), "normal", [&]<typename T>() {
    T* o = static_cast<T*>(out.raw_data());
    // Element for element what philox::normal(seed, offset, i) gives.
    for_each_philox_group(seed, offset, static_cast<std::uint64_t>(out.numel()), 65536,
                          [&](const std::uint32_t* words, std::uint64_t first, std::uint64_t begin, std::uint64_t end) {
                            for (std::uint64_t e = begin; e < end; ++e) {
                              // Words (0,1) and (2,3) of a block pair up; first is a multiple of 4.
                              const std::uint64_t k = e - first, pair = k - k % 2;
                              o[e - offset] = static_cast<T>(std::fma(std, double(philox::box_muller(words[pair], words[pair + 1], k % 2 != 0)), mean));
                            }
                          });
  });
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
