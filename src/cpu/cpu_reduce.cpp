// Reductions: each output element walks its slice of the reduced dims.
// Sums accumulate in double so float32 sums over large tensors stay accurate.
#include <limits>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

namespace {

struct ReduceGeometry {
  std::vector<std::int64_t> kept_sizes, kept_x_strides;  // output-element dims
  std::vector<std::int64_t> red_sizes, red_strides;      // reduced dims (elements)
  std::int64_t red_numel = 1;

  ReduceGeometry(const Tensor& x, const Tensor& out) {
    for (std::int64_t d = 0; d < x.dim(); ++d) {
      if (x.size(d) == out.size(d)) {
        kept_sizes.push_back(x.size(d));
        kept_x_strides.push_back(x.stride(d));
      } else {
        red_sizes.push_back(x.size(d));
        red_strides.push_back(x.stride(d));
        red_numel *= x.size(d);
      }
    }
  }
  // Offset in x of the first element reduced into output element o (row-major o).
  std::int64_t base_offset(std::int64_t o) const {
    std::int64_t off = 0;
    for (std::size_t d = kept_sizes.size(); d-- > 0;) {
      off += (o % kept_sizes[d]) * kept_x_strides[d];
      o /= kept_sizes[d];
    }
    return off;
  }
  // Visits every reduced element's offset relative to the base, in row-major order.
  template <typename F>
  void for_each_reduced(F&& f) const {
    if (red_sizes.empty()) { f(std::int64_t{0}); return; }
    const std::size_t last = red_sizes.size() - 1;
    std::vector<std::int64_t> idx(red_sizes.size(), 0);
    std::int64_t off = 0;
    while (true) {
      for (std::int64_t i = 0; i < red_sizes[last]; ++i) f(off + i * red_strides[last]);
      std::size_t d = last;
      while (true) {
        if (d == 0) return;
        --d;
        off += red_strides[d];
        if (++idx[d] < red_sizes[d]) break;
        off -= idx[d] * red_strides[d];
        idx[d] = 0;
      }
    }
  }
};

}  // namespace

void CpuBackend::reduce(ReduceOp op, const Tensor& x, const Tensor& out) {
  const ReduceGeometry g(x, out);
  dispatch_floating(x.dtype(), "reduce", [&]<typename T>() {
    const T* xp = static_cast<const T*>(x.raw_data());
    T* op_out = static_cast<T*>(out.raw_data());
    const std::int64_t n_out = out.numel();
#pragma omp parallel for schedule(static) if (n_out * g.red_numel > 32768 && n_out > 1)
    for (std::int64_t o = 0; o < n_out; ++o) {
      const T* base = xp + g.base_offset(o);
      if (op == ReduceOp::sum) {
        double acc = 0;
        g.for_each_reduced([&](std::int64_t off) { acc += static_cast<double>(base[off]); });
        op_out[o] = static_cast<T>(acc);
      } else {
        T acc = op == ReduceOp::max ? -std::numeric_limits<T>::infinity()
                                    : std::numeric_limits<T>::infinity();
        bool nan = false;
        g.for_each_reduced([&](std::int64_t off) {
          const T v = base[off];
          nan = nan || v != v;
          acc = op == ReduceOp::max ? (v > acc ? v : acc) : (v < acc ? v : acc);
        });
        op_out[o] = nan ? std::numeric_limits<T>::quiet_NaN() : acc;  // NaN propagates, as in torch
      }
    }
  });
}

void CpuBackend::argmax(const Tensor& x, std::int64_t dim, const Tensor& out) {
  dispatch_floating(x.dtype(), "argmax", [&]<typename T>() {
    const T* xp = static_cast<const T*>(x.raw_data());
    auto* op_out = static_cast<std::int64_t*>(out.raw_data());
    const ReduceGeometry g(x, out);
    const std::int64_t n = x.size(dim), stride = x.stride(dim), n_out = out.numel();
#pragma omp parallel for schedule(static) if (n_out * n > 32768 && n_out > 1)
    for (std::int64_t o = 0; o < n_out; ++o) {
      const T* base = xp + g.base_offset(o);
      std::int64_t best = 0;
      for (std::int64_t i = 1; i < n; ++i)
        if (base[i * stride] > base[best * stride]) best = i;
      op_out[o] = best;
    }
  });
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
