// Softmax and log-softmax along one dim of a contiguous tensor viewed as
// [outer, n, inner]. Each task takes one outer index and a block of up to
// kBlock inner positions, so the innermost loops run over contiguous memory
// whether dim is the last one (inner = 1) or not. Stable: the maximum is
// subtracted before exp, and sums accumulate in double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "cpu/cpu_backend.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

namespace {

constexpr std::int64_t kBlock = 64;

struct SoftmaxView {
  std::int64_t outer = 1, n = 1, inner = 1;
  SoftmaxView(const Tensor& x, std::int64_t dim) {
    for (std::int64_t d = 0; d < dim; ++d) outer *= x.size(d);
    n = x.size(dim);
    for (std::int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  }
  std::int64_t blocks() const { return (inner + kBlock - 1) / kBlock; }
};

// f(base offset of line j = 0, first inner index, block width) for every task.
template <typename F>
void for_each_block(const SoftmaxView& v, F&& f) {
  const std::int64_t blocks = v.blocks(), tasks = v.outer * blocks;
#pragma omp parallel for schedule(static) if (tasks > 1 && v.outer * v.n * v.inner > 16384)
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
    f(o * v.n * v.inner + j0, std::min(kBlock, v.inner - j0));
  }
}

}  // namespace

void CpuBackend::softmax_forward(const Tensor& x, std::int64_t dim, bool log, const Tensor& out) {
  const SoftmaxView v(x, dim);
  dispatch_floating(x.dtype(), "softmax", [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    if (v.inner == 1) {  // rows along the last dim: contiguous, one row per task
#pragma omp parallel for schedule(static) if (v.outer > 1 && v.outer * v.n > 16384)
      for (std::int64_t o = 0; o < v.outer; ++o) {
        const T* row = xp + o * v.n;
        T* dst = yp + o * v.n;
        const T mx = *std::max_element(row, row + v.n);
        double sum = 0;
        for (std::int64_t k = 0; k < v.n; ++k) {
          const T e = std::exp(row[k] - mx);
          dst[k] = e;  // kept for softmax, overwritten for log-softmax
          sum += static_cast<double>(e);
        }
        if (log) {
          const T log_sum = static_cast<T>(std::log(sum));
          for (std::int64_t k = 0; k < v.n; ++k) dst[k] = (row[k] - mx) - log_sum;  // row - mx is exact
        } else {
          const T inv = static_cast<T>(1.0 / sum);
          for (std::int64_t k = 0; k < v.n; ++k) dst[k] *= inv;
        }
      }
      return;
    }
    for_each_block(v, [&](std::int64_t base, std::int64_t width) {
      T mx[kBlock];
      double sum[kBlock];
      std::fill(mx, mx + width, -std::numeric_limits<T>::infinity());
      std::fill(sum, sum + width, 0.0);
      for (std::int64_t k = 0; k < v.n; ++k) {
        const T* row = xp + base + k * v.inner;
        for (std::int64_t j = 0; j < width; ++j) mx[j] = std::max(mx[j], row[j]);
      }
      for (std::int64_t k = 0; k < v.n; ++k) {
        const T* row = xp + base + k * v.inner;
        T* dst = yp + base + k * v.inner;
        for (std::int64_t j = 0; j < width; ++j) {
          const T e = std::exp(row[j] - mx[j]);
          dst[j] = e;  // kept for softmax, overwritten for log-softmax
          sum[j] += static_cast<double>(e);
        }
      }
      T factor[kBlock];  // 1 / sum for softmax, log(sum) for log-softmax
      for (std::int64_t j = 0; j < width; ++j)
        factor[j] = static_cast<T>(log ? std::log(sum[j]) : 1.0 / sum[j]);
      for (std::int64_t k = 0; k < v.n; ++k) {
        const T* row = xp + base + k * v.inner;
        T* dst = yp + base + k * v.inner;
        if (log) {
          for (std::int64_t j = 0; j < width; ++j) dst[j] = (row[j] - mx[j]) - factor[j];
        } else {
          for (std::int64_t j = 0; j < width; ++j) dst[j] *= factor[j];
        }
      }
    });
  });
}

void CpuBackend::softmax_backward(const Tensor& grad_out, const Tensor& out, std::int64_t dim,
                                  bool log, const Tensor& grad_in) {
  const SoftmaxView v(out, dim);
  dispatch_floating(out.dtype(), "softmax_backward", [&]<typename T>() {
    const T* gp = grad_out.data<T>();
    const T* yp = out.data<T>();
    T* gip = grad_in.data<T>();
    for_each_block(v, [&](std::int64_t base, std::int64_t width) {
      double dot[kBlock];  // sum(g * y) for softmax, sum(g) for log-softmax
      std::fill(dot, dot + width, 0.0);
      for (std::int64_t k = 0; k < v.n; ++k) {
        const T* g = gp + base + k * v.inner;
        const T* y = yp + base + k * v.inner;
        for (std::int64_t j = 0; j < width; ++j)
          dot[j] += log ? static_cast<double>(g[j]) : static_cast<double>(g[j]) * y[j];
      }
      for (std::int64_t k = 0; k < v.n; ++k) {
        const T* g = gp + base + k * v.inner;
        const T* y = yp + base + k * v.inner;
        T* dst = gip + base + k * v.inner;
        for (std::int64_t j = 0; j < width; ++j)
          dst[j] = log ? g[j] - std::exp(y[j]) * static_cast<T>(dot[j])
                       : y[j] * (g[j] - static_cast<T>(dot[j]));
      }
    });
  });
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
