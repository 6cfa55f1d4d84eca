#pragma once
// Batch norm's per-channel coefficients (Backend::batch_norm_coefficients),
// one channel at a time, written once for the cpu loop and the GPU kernel
// (kernels/batchnorm.cu).
//
// Each value repeats, operation for operation, what src/ops/batch_norm.cpp
// composed from tensor ops before this existed (eleven kernel launches per
// forward on a GPU, each over a vector of C values): every hyper-parameter
// first rounded to T, as the tensor ops round their scalars, and every
// product rounded before it is added (`rounded_product`), as two separate
// kernels would round it. nvcc would otherwise fuse a product and a sum into
// one FMA. So cpu, sim and cuda agree to the last bit, with each other and
// with that composition (tests/ops/test_batch_norm.cpp checks both).
// Included by CUDA kernels, hence the host/device qualifiers.
#include <cmath>
#include <cstdint>

#include "convkit/backend/kernel_params.h"
#include "convkit/core/host_device.h"

namespace convkit::batch_norm_math {

// a * b rounded to T, never contracted with a following sum. On the host
// the product passes through a volatile: g++ contracts C++ across statements
// (-ffp-contract=fast is its default for C++, ISO mode or not), and the cpu
// kernels' AVX2 and AVX-512 copies have FMA. C values per call, so the cost
// is nothing.
template <typename T>
CK_HOST_DEVICE inline T rounded_product(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == sizeof(float)) {
    return __fmul_rn(a, b);
  } else {
    return __dmul_rn(a, b);
  }
#else
  const volatile T product = a * b;
  return product;
#endif
}

// BatchNormCoefficientStep rounded to T once per call.
template <typename T>
struct CoefficientScalars {
  T eps, keep, momentum, var_momentum;  // keep = 1 - momentum; var_momentum = momentum * variance_correction
};

template <typename T>
CoefficientScalars<T> coefficient_scalars(const BatchNormCoefficientStep& s) {
  return {static_cast<T>(s.eps), static_cast<T>(1.0 - s.momentum), static_cast<T>(s.momentum),
          static_cast<T>(s.momentum * s.variance_correction)};
}

// The channel's operands and results. weight is required (the op passes ones
// when the layer has none); bias may be null, and running_mean and
// running_var are both null (eval, or no running statistics) or both not.
template <typename T>
struct CoefficientArrays {
  const T* mean;
  const T* var;
  const T* weight;
  const T* bias;
  T* running_mean;
  T* running_var;
  T* invstd;
  T* scale;
  T* shift;
};

//   invstd = 1 / sqrt(var + eps)           scale = weight * invstd
//   shift  = -(mean * scale) + bias        (bias null: -(mean * scale))
//   running_mean = running_mean * keep + mean * momentum
//   running_var  = running_var * keep + var * var_momentum
template <typename T>
CK_HOST_DEVICE inline void coefficients_of_channel(const CoefficientScalars<T>& s, const CoefficientArrays<T>& a,
                                                   std::int64_t c) {
  const T mean = a.mean[c], var = a.var[c];
  const T invstd = T(1) / std::sqrt(var + s.eps);
  const T scale = rounded_product(a.weight[c], invstd);
  const T centred = -rounded_product(mean, scale);
  a.invstd[c] = invstd;
  a.scale[c] = scale;
  a.shift[c] = a.bias != nullptr ? centred + a.bias[c] : centred;
  if (a.running_mean != nullptr) {
    a.running_mean[c] = rounded_product(a.running_mean[c], s.keep) + rounded_product(mean, s.momentum);
    a.running_var[c] = rounded_product(a.running_var[c], s.keep) + rounded_product(var, s.var_momentum);
  }
}

}  // namespace convkit::batch_norm_math
