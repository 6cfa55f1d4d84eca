#pragma once
// The fused optimizer updates (Backend::sgd_update, Backend::adam_update),
// element by element, written once for the cpu loop and the GPU kernels.
//
// Each step repeats the composed reference in src/optim (sgd_update,
// adam_update, built from in-place tensor ops) operation for operation: the
// same products and sums, in the same order, with every hyper-parameter first
// rounded to T as the tensor ops round their scalars. So the two agree to the
// last bit except where a compiler contracts a product and a sum into one FMA
// (g++ -march=native and nvcc both may), which moves a float32 result by an
// ulp or so. Included by CUDA kernels, hence the host/device qualifiers.
#include <cmath>

#include "convkit/backend/kernel_params.h"
#include "convkit/core/host_device.h"


namespace convkit::optim_math {

CK_HOST_DEVICE inline float square_root(float x) { return sqrtf(x); }
CK_HOST_DEVICE inline double square_root(double x) { return sqrt(x); }

// SgdStep's hyper-parameters rounded to T once per tensor.
template <typename T>
struct SgdScalars {
  bool weight_decay_on, momentum_on, nesterov, first_step;
  T weight_decay, momentum, one_minus_dampening, neg_lr;
};

template <typename T>
SgdScalars<T> sgd_scalars(const SgdStep& s) {
  return {s.weight_decay != 0,
          s.momentum != 0,
          s.nesterov,
          s.first_step,
          static_cast<T>(s.weight_decay),
          static_cast<T>(s.momentum),
          static_cast<T>(1.0 - s.dampening),
          static_cast<T>(-s.lr)};
}

// optim::sgd_update for one element; `buf` is ignored without momentum.
template <typename T>
CK_HOST_DEVICE inline void sgd_element(const SgdScalars<T>& s, T& p, T grad, T& buf) {
  T d = s.weight_decay_on ? grad + p * s.weight_decay : grad;
  if (s.momentum_on) {
    buf = s.first_step ? d : buf * s.momentum + d * s.one_minus_dampening;
    d = s.nesterov ? d + buf * s.momentum : buf;
  }
  p = p + d * s.neg_lr;
}

// AdamStep's hyper-parameters, and the scalars derived from them in double,
// rounded to T once per tensor.
template <typename T>
struct AdamScalars {
  bool decoupled_decay_on, l2_decay_on;
  T decay_factor;   // 1 - lr * weight_decay (AdamW)
  T weight_decay;   // Adam's L2 coefficient
  T beta1, one_minus_beta1, beta2, one_minus_beta2;
  T inv_bias_correction2_sqrt, eps, neg_step_size;  // 1 / sqrt(1 - beta2^t), eps, -lr / (1 - beta1^t)
};

template <typename T>
AdamScalars<T> adam_scalars(const AdamStep& s) {
  return {s.weight_decay != 0 && s.decoupled_weight_decay,
          s.weight_decay != 0 && !s.decoupled_weight_decay,
          static_cast<T>(1.0 - s.lr * s.weight_decay),
          static_cast<T>(s.weight_decay),
          static_cast<T>(s.beta1),
          static_cast<T>(1.0 - s.beta1),
          static_cast<T>(s.beta2),
          static_cast<T>(1.0 - s.beta2),
          static_cast<T>(1.0 / s.bias_correction2_sqrt),
          static_cast<T>(s.eps),
          static_cast<T>(-(s.lr / s.bias_correction1))};
}

// optim::adam_update for one element.
template <typename T>
CK_HOST_DEVICE inline void adam_element(const AdamScalars<T>& s, T& p, T grad, T& m, T& v) {
  if (s.decoupled_decay_on) p = p * s.decay_factor;
  const T g = s.l2_decay_on ? grad + p * s.weight_decay : grad;
  m = m * s.beta1 + g * s.one_minus_beta1;
  v = v * s.beta2 + (g * g) * s.one_minus_beta2;
  const T denom = square_root(v) * s.inv_bias_correction2_sqrt + s.eps;
  p = p + (m / denom) * s.neg_step_size;
}

}  // namespace convkit::optim_math
