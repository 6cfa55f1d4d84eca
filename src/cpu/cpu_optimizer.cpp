// Fused optimizer updates: one pass over param, grad and the state buffers,
// where the composed reference (src/optim) makes a pass per tensor op and
// allocates temporaries. The per-element rule is optimizer_math.h, shared
// with the GPU kernels.
#include <cstdint>

#include "convkit/backend/optimizer_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

namespace {
// Below this many elements a parallel region costs more than the loop.
constexpr std::int64_t kParallelWork = 32768;
}  // namespace

void CpuBackend::sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                            SgdStep step) {
  dispatch_floating(param.dtype(), "sgd_update", [&]<typename T>() {
    const optim_math::SgdScalars<T> s = optim_math::sgd_scalars<T>(step);
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    const std::int64_t n = param.numel();
    if (s.momentum_on) {
      T* buf = momentum_buffer.data<T>();
#pragma omp parallel if (n > kParallelWork)
      {
        // Each thread's own copy of the scalars: read through the shared
        // one, they might alias p as far as GCC knew, so it reloaded them and
        // tested the flags every element, in scalar code (4-5% of a
        // cifar10-cnn step at batch 32). A local copy lets it hoist the
        // tests out of the loop and vectorise.
        const optim_math::SgdScalars<T> local = s;
#pragma omp for schedule(static)
        for (std::int64_t i = 0; i < n; ++i) optim_math::sgd_element(local, p[i], g[i], buf[i]);
      }
    } else {
#pragma omp parallel if (n > kParallelWork)
      {
        const optim_math::SgdScalars<T> local = s;
#pragma omp for schedule(static)
        for (std::int64_t i = 0; i < n; ++i) {
          T no_buffer = 0;
          optim_math::sgd_element(local, p[i], g[i], no_buffer);
        }
      }
    }
  });
}

void CpuBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                             const Tensor& exp_avg_sq, AdamStep step) {
  dispatch_floating(param.dtype(), "adam_update", [&]<typename T>() {
    const optim_math::AdamScalars<T> s = optim_math::adam_scalars<T>(step);
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* m = exp_avg.data<T>();
    T* v = exp_avg_sq.data<T>();
    const std::int64_t n = param.numel();
#pragma omp parallel if (n > kParallelWork)
    {
      const optim_math::AdamScalars<T> local = s;  // as in sgd_update
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < n; ++i) optim_math::adam_element(local, p[i], g[i], m[i], v[i]);
    }
  });
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
