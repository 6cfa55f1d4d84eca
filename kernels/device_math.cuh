#pragma once
// Float and double overloads of the math functions kernels use, spelled the
// same under nvcc (device functions) and g++ (the C library), so a templated
// kernel calls dev::exp(x) for either type.
#include "convkit/sim/cuda_compat.h"

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

}  // namespace convkit::CK_GPU_NS::dev
