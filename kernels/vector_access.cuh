#pragma once
// 16-byte loads and stores of float (4) or double (2) elements, for kernels
// whose performance depends on moving 16 bytes per lane in one instruction,
// and the 8-byte load and store of two floats (load8, store8). Under nvcc
// they are float4 / double2 / float2 accesses. Under sim they go through a
// GCC vector type, which g++ moves as one 16-byte access where it splits a
// float4 struct into four 4-byte ones; the sim profile then counts the
// request nvcc would issue (docs/sim.md, B/lane). The pointer must be 16-byte
// aligned (8-byte for the float pairs).
#include <cstdint>

#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS::dev {

// Elements of T in 16 bytes.
template <typename T>
inline constexpr int kVec16 = static_cast<int>(16 / sizeof(T));

// Whether p may be accessed 16 (8) bytes at a time: on the host before a
// launch, or in a kernel that picks its access width per address.
__host__ __device__ inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
__host__ __device__ inline bool aligned8(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 8 == 0; }

#if defined(CONVKIT_SIM_KERNEL)
namespace vector_detail {
template <typename T>
struct Vec16Of;
template <>
struct Vec16Of<float> {
  typedef float type __attribute__((vector_size(16)));
};
template <>
struct Vec16Of<double> {
  typedef double type __attribute__((vector_size(16)));
};
template <typename T>
using Vec16 = typename Vec16Of<T>::type;
typedef float Float2 __attribute__((vector_size(8)));
}  // namespace vector_detail

// Two floats at p (8-byte aligned) in one 8-byte access.
__device__ __forceinline__ void load8(const float* p, float* r) {
  const auto v = *reinterpret_cast<const vector_detail::Float2*>(p);
  r[0] = v[0], r[1] = v[1];
}

__device__ __forceinline__ void store8(float* p, const float* r) {
  vector_detail::Float2 v;
  v[0] = r[0], v[1] = r[1];
  *reinterpret_cast<vector_detail::Float2*>(p) = v;
}

template <typename T>
__device__ __forceinline__ void load16(const T* p, T* r) {
  const auto v = *reinterpret_cast<const vector_detail::Vec16<T>*>(p);
  for (int i = 0; i < kVec16<T>; ++i) r[i] = v[i];
}
template <typename T>
__device__ __forceinline__ void store16(T* p, const T* r) {
  vector_detail::Vec16<T> v;
  for (int i = 0; i < kVec16<T>; ++i) v[i] = r[i];
  *reinterpret_cast<vector_detail::Vec16<T>*>(p) = v;
}
#else
__device__ __forceinline__ void load8(const float* p, float* r) {
  const float2 v = *reinterpret_cast<const float2*>(p);
  r[0] = v.x, r[1] = v.y;
}
__device__ __forceinline__ void store8(float* p, const float* r) {
  *reinterpret_cast<float2*>(p) = make_float2(r[0], r[1]);
}
__device__ __forceinline__ void load16(const float* p, float* r) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
}
__device__ __forceinline__ void load16(const double* p, double* r) {
  const double2 v = *reinterpret_cast<const double2*>(p);
  r[0] = v.x, r[1] = v.y;
}
__device__ __forceinline__ void store16(float* p, const float* r) {
  *reinterpret_cast<float4*>(p) = make_float4(r[0], r[1], r[2], r[3]);
}
__device__ __forceinline__ void store16(double* p, const double* r) {
  *reinterpret_cast<double2*>(p) = make_double2(r[0], r[1]);
}
#endif

}  // namespace convkit::CK_GPU_NS::dev
