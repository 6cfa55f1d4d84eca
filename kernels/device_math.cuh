#pragma once
// Float and double overloads of the math functions kernels use, spelled the
// same under nvcc (device functions) and g++ (the C library), so a templated
// kernel calls dev::exp(x) for either type.
//
// dev::fma(a, b, c) is a multiply-add that the sim performance model counts
// (convkit/sim/profile.h): kernels spell their inner products with it. Under
// nvcc it is the fused fma; under sim it computes a * b + c exactly as the
// kernel wrote it before (so sim stays bit for bit with what it was), and
// counts one FMA while a profile runs.
#include "convkit/sim/cuda_compat.h"
#if defined(CONVKIT_SIM_KERNEL)
#include "convkit/sim/arithmetic_count.h"
#endif

namespace convkit::CK_GPU_NS::dev {

__device__ __forceinline__ float exp(float x) { return ::expf(x); }
__device__ __forceinline__ double exp(double x) { return ::exp(x); }
__device__ __forceinline__ float log(float x) { return ::logf(x); }
__device__ __forceinline__ double log(double x) { return ::log(x); }
__device__ __forceinline__ float sqrt(float x) { return ::sqrtf(x); }
__device__ __forceinline__ double sqrt(double x) { return ::sqrt(x); }
__device__ __forceinline__ float tanh(float x) { return ::tanhf(x); }
__device__ __forceinline__ double tanh(double x) { return ::tanh(x); }
__device__ __forceinline__ float pow(float x, float y) { return ::powf(x, y); }
__device__ __forceinline__ double pow(double x, double y) { return ::pow(x, y); }
__device__ __forceinline__ float abs(float x) { return ::fabsf(x); }
__device__ __forceinline__ double abs(double x) { return ::fabs(x); }

#if defined(CONVKIT_SIM_KERNEL)
template <typename T>
__device__ __forceinline__ T fma(T a, T b, T c) {
  ::convkit::sim::detail::count_fmas(1);
  return a * b + c;
}
// Multiply-adds a kernel spells another way (a complex multiply-add is four),
// counted without touching its arithmetic.
__device__ __forceinline__ void count_fmas(unsigned n) { ::convkit::sim::detail::count_fmas(n); }
#else
__device__ __forceinline__ float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
__device__ __forceinline__ double fma(double a, double b, double c) { return ::fma(a, b, c); }
__device__ __forceinline__ void count_fmas(unsigned) {}
#endif

}  // namespace convkit::CK_GPU_NS::dev
