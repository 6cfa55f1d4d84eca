#pragma once
// Tensor-core instructions as device functions, spelled the same under nvcc
// (inline PTX, sm_80 and later) and under sim (convkit/sim/mma.h, which holds
// the fragment layouts and the emulation's rounding rules).
//
//   dev::cvt_rna_tf32(x)          cvt.rna.tf32.f32: x rounded to tf32 (nearest,
//                                 ties away), as an f32 bit pattern
//   dev::pack_bf16x2(lo, hi)      cvt.rn.bf16x2.f32: two bf16 (nearest even)
//   dev::mma_m16n8k8_tf32(d,a,b,c)   mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
//   dev::mma_m16n8k16_bf16(d,a,b,c)  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
//
// and the layouts around them: where a lane's accumulators sit
// (mma_c_row, mma_c_col), and a fragment word read from a float32 stage in
// shared memory (stage_word).
//
// The mma functions are warp-collective: all 32 lanes of the warp call them
// together, with a[4], b[2], c[4] in and d[4] out per lane (d may be c).
#include <cstdint>

#include "convkit/sim/cuda_compat.h"
#include "kernels/tensor_core_precision.cuh"
#include "kernels/vector_access.cuh"
#if defined(CONVKIT_SIM_KERNEL)
#include "convkit/sim/mma.h"
#endif

namespace convkit::CK_GPU_NS::dev {

#if defined(CONVKIT_SIM_KERNEL)
__device__ __forceinline__ std::uint32_t cvt_rna_tf32(float x) { return ::convkit::sim::tf32_round_rna(x); }
__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
  return ::convkit::sim::pack_bf16x2(lo, hi);
}
__device__ __forceinline__ void mma_m16n8k8_tf32(float* d, const std::uint32_t* a, const std::uint32_t* b,
                                                 const float* c, const char* file = __builtin_FILE(),
                                                 int line = __builtin_LINE()) {
  ::convkit::sim::mma_sync(::convkit::sim::MmaShape::m16n8k8_tf32, d, a, b, c, file, line);
}
__device__ __forceinline__ void mma_m16n8k16_bf16(float* d, const std::uint32_t* a, const std::uint32_t* b,
                                                  const float* c, const char* file = __builtin_FILE(),
                                                  int line = __builtin_LINE()) {
  ::convkit::sim::mma_sync(::convkit::sim::MmaShape::m16n8k16_bf16, d, a, b, c, file, line);
}
#else
__device__ __forceinline__ std::uint32_t cvt_rna_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
  std::uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));  // first source goes high
  return r;
}
__device__ __forceinline__ void mma_m16n8k8_tf32(float* d, const std::uint32_t* a, const std::uint32_t* b,
                                                 const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
}
__device__ __forceinline__ void mma_m16n8k16_bf16(float* d, const std::uint32_t* a, const std::uint32_t* b,
                                                  const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
}
#endif

// One mma of precision P, accumulating into d: m16n8k8 for tf32, m16n8k16 for
// bf16, on fragments of the same shape in 32-bit words.
template <TensorCorePrecision P>
__device__ __forceinline__ void mma(float* d, const std::uint32_t* a, const std::uint32_t* b) {
  if constexpr (P == TensorCorePrecision::tf32) {
    mma_m16n8k8_tf32(d, a, b, d);
  } else {
    mma_m16n8k16_bf16(d, a, b, d);
  }
}

// Word kw of a run of k starting at k0, from element(k) (0 past the end is the
// caller's): element k0 + kw rounded to tf32, or the pair k0 + 2kw, k0 + 2kw + 1
// packed as two bf16 (the lower k in the low half).
template <TensorCorePrecision P, class Element, class Index>
__device__ __forceinline__ std::uint32_t word_of(Element element, Index k0, int kw) {
  if constexpr (P == TensorCorePrecision::tf32) {
    return cvt_rna_tf32(element(k0 + kw));
  } else {
    return pack_bf16x2(element(k0 + 2 * kw), element(k0 + 2 * kw + 1));
  }
}

// Where accumulator e (0..3) of a lane's 16x8 C (or D) fragment sits in the
// tile: row lane / 4 (+8 for e >= 2), column 2 * (lane % 4) + (e & 1).
__device__ __forceinline__ int mma_c_row(int lane, int e) { return lane / 4 + (e >= 2 ? 8 : 0); }
__device__ __forceinline__ int mma_c_col(int lane, int e) { return lane % 4 * 2 + (e & 1); }

// x rounded to tf32 (cvt.rna), as a float: what a stage holds when its
// operands are rounded before the fragment reads.
__device__ __forceinline__ float tf32_rounded(float x) { return __uint_as_float(cvt_rna_tf32(x)); }

// The fragment word at p, converted as it is read: *p rounded to tf32, or
// p[0] and p[1] (one 8-byte load: p 8-byte aligned) packed as two bf16.
template <TensorCorePrecision P>
__device__ __forceinline__ std::uint32_t word_at(const float* p) {
  if constexpr (P == TensorCorePrecision::tf32) {
    return cvt_rna_tf32(*p);
  } else {
    float pair[2];
    load8(p, pair);
    return pack_bf16x2(pair[0], pair[1]);
  }
}

// Fragment word kw of row x of a float32 stage, converted as it is read:
// element kw rounded to tf32, or elements 2kw and 2kw + 1 packed as two bf16.
// The stage holds X(x, k) at s[k * Pitch + x] when XContig, else at
// s[x * Pitch + k] (where a bf16 pair is one 8-byte load: Pitch even).
// Rounded: the stage's tf32 values were rounded before they landed (by the
// copies, or in place), so a tf32 word is read as it is.
template <TensorCorePrecision P, bool XContig, int Pitch, bool Rounded = false>
__device__ __forceinline__ std::uint32_t stage_word(const float* s, int x, int kw) {
  const auto at = [&](int k) { return XContig ? k * Pitch + x : x * Pitch + k; };
  if constexpr (Rounded && P == TensorCorePrecision::tf32) {
    return __float_as_uint(s[at(kw)]);
  } else if constexpr (P == TensorCorePrecision::bf16 && XContig) {
    return pack_bf16x2(s[at(2 * kw)], s[at(2 * kw + 1)]);
  } else {
    return word_at<P>(s + at(P == TensorCorePrecision::tf32 ? kw : 2 * kw));
  }
}

}  // namespace convkit::CK_GPU_NS::dev

namespace convkit::CK_GPU_NS {
// Elements of k per mma (and per 8 fragment words).
template <TensorCorePrecision P>
inline constexpr int kMmaStepK = P == TensorCorePrecision::tf32 ? 8 : 16;
// Elements of k per 32-bit word.
template <TensorCorePrecision P>
inline constexpr int kElementsPerWord = P == TensorCorePrecision::tf32 ? 1 : 2;
}  // namespace convkit::CK_GPU_NS
