#pragma once
// CUDA's device math and bit intrinsics, memory fences and __ldg, for the sim
// backend.
//
// The fast-math intrinsics (__expf, __fdividef, ...) are computed at full
// precision here; the GPU's versions are approximations with a few ulps of error.
// Compare sim results against references with a tolerance, never bit for bit.
#include <atomic>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>

#include "convkit/sim/runtime.h"

// ---- fast-math intrinsics.
// glibc's <math.h> already declares __expf, __logf, ... as C functions that it
// does not export, so those are defined here with C linkage to match.
extern "C" {
inline float __expf(float x) noexcept { return expf(x); }
inline float __exp10f(float x) noexcept { return exp10f(x); }
inline float __logf(float x) noexcept { return logf(x); }
inline float __log2f(float x) noexcept { return log2f(x); }
inline float __log10f(float x) noexcept { return log10f(x); }
inline float __sinf(float x) noexcept { return sinf(x); }
inline float __cosf(float x) noexcept { return cosf(x); }
inline float __tanf(float x) noexcept { return tanf(x); }
inline float __powf(float x, float y) noexcept { return powf(x, y); }
inline void __sincosf(float x, float* s, float* c) noexcept {
  *s = sinf(x);
  *c = cosf(x);
}
}

inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }  // NaN -> 0
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
// Cumulative distribution function of the standard normal distribution.
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752); }

// Correctly rounded single operations; the _rn suffix only stops nvcc from
// contracting them into an FMA, which g++ does not do across these calls either.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }

// ---- min / max overloads that CUDA provides as device functions.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

// ---- conversions and reinterpretations
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline int __float2int_rn(float x) { return static_cast<int>(std::nearbyint(x)); }  // ties to even
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __float2int_rd(float x) { return static_cast<int>(std::floor(x)); }
inline int __float2int_ru(float x) { return static_cast<int>(std::ceil(x)); }
inline unsigned __float2uint_rn(float x) { return static_cast<unsigned>(std::nearbyint(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }

// ---- bit manipulation
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return std::countl_zero(static_cast<unsigned long long>(x)); }
// Position (1-based) of the least significant set bit; 0 when none is set.
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline int __ffsll(long long x) {
  return x == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(x)) + 1;
}
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i, x >>= 1) r = (r << 1) | (x & 1u);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  unsigned long long r = 0;
  for (int i = 0; i < 64; ++i, x >>= 1) r = (r << 1) | (x & 1u);
  return r;
}
// High 32 (or 64) bits of the full product.
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
// Schoolbook multiplication on 32-bit halves (ISO C++ has no 128-bit integer).
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  const unsigned long long a_lo = a & 0xffffffffu, a_hi = a >> 32;
  const unsigned long long b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const unsigned long long lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi;
  const unsigned long long middle = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
  return a_hi * b_hi + (hi_lo >> 32) + (middle >> 32);
}
// 24-bit multiplies: the low 24 bits of each operand (sign-extended for the
// signed form), low 32 bits of the product.
inline int __mul24(int a, int b) {
  const auto low24 = [](int v) { return static_cast<int>(static_cast<unsigned>(v) << 8) >> 8; };
  return static_cast<int>(static_cast<unsigned>(low24(a)) * static_cast<unsigned>(low24(b)));
}
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }

// ---- memory
// Loads through the read-only data cache on a GPU; a plain load here.
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
// Blocks on different OS threads share memory, so fences must be real. The CPU's
// memory model is stronger than the GPU's, though: a kernel that forgets a fence
// still works here.
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// __trap() aborts the kernel on a GPU; here it ends the launch with a
// convkit::Error naming the call site.
[[noreturn]] inline void __trap(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  convkit::sim::detail::trap(file, line);
}
