// Fused log-softmax + negative log-likelihood with label smoothing, one row
// (sample) per task. Row sums accumulate in double; the backward reuses the
// forward's log-sum-exp instead of recomputing it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "cpu/cpu_backend.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

void CpuBackend::cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                       double label_smoothing, const Tensor& loss,
                                       const Tensor& lse) {
  const std::int64_t N = logits.size(0), C = logits.size(1);
  dispatch_floating(logits.dtype(), "cross_entropy", [&]<typename T>() {
    const T* xp = logits.data<T>();
    const std::int64_t* tp = targets.data<std::int64_t>();
    T* lp = loss.data<T>();
    T* sp = lse.data<T>();
    const double on_target = 1.0 - label_smoothing, uniform = label_smoothing / static_cast<double>(C);
#pragma omp parallel for schedule(static) if (N * C > 16384)
    for (std::int64_t n = 0; n < N; ++n) {
      const T* row = xp + n * C;
      T mx = -std::numeric_limits<T>::infinity();
      for (std::int64_t c = 0; c < C; ++c) mx = std::max(mx, row[c]);
      double sum_exp = 0, sum_x = 0;
      for (std::int64_t c = 0; c < C; ++c) {
        sum_exp += static_cast<double>(std::exp(row[c] - mx));
        sum_x += static_cast<double>(row[c]);
      }
      const double log_sum_exp = static_cast<double>(mx) + std::log(sum_exp);
      sp[n] = static_cast<T>(log_sum_exp);
      lp[n] = static_cast<T>(log_sum_exp - on_target * static_cast<double>(row[tp[n]]) - uniform * sum_x);
    }
  });
}

void CpuBackend::cross_entropy_backward(const Tensor& logits, const Tensor& targets,
                                        const Tensor& lse, const Tensor& grad_loss,
                                        double label_smoothing, const Tensor& grad_logits) {
  const std::int64_t N = logits.size(0), C = logits.size(1);
  dispatch_floating(logits.dtype(), "cross_entropy_backward", [&]<typename T>() {
    const T* xp = logits.data<T>();
    const std::int64_t* tp = targets.data<std::int64_t>();
    const T* sp = lse.data<T>();
    const T* gp = grad_loss.data<T>();
    T* gl = grad_logits.data<T>();
    const T on_target = static_cast<T>(1.0 - label_smoothing);
    const T uniform = static_cast<T>(label_smoothing / static_cast<double>(C));
#pragma omp parallel for schedule(static) if (N * C > 16384)
    for (std::int64_t n = 0; n < N; ++n) {
      const T* row = xp + n * C;
      T* dst = gl + n * C;
      const T g = gp[n], s = sp[n];
      for (std::int64_t c = 0; c < C; ++c) dst[c] = g * (std::exp(row[c] - s) - uniform);
      dst[tp[n]] -= g * on_target;
    }
  });
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
