#pragma once
// The tensor-core instruction mma.sync for the sim backend, and the
// conversions that feed it (cvt.rna.tf32.f32, cvt.rn.bf16x2.f32).
//
// mma.sync.aligned is warp-collective: each of the 32 lanes holds a few
// registers of A, B and C ("fragments"), and the product D = A*B + C comes back
// scattered over the lanes the same way. The layouts below are those of the
// PTX ISA ("Matrix Fragments for mma.m16n8k8" and "for mma.m16n8k16 with
// floating point type"), with
//   group = laneid >> 2,  tig = laneid % 4   (thread id in group).
//
// m16n8k8 .row.col .f32.tf32.tf32.f32:
//   A 16x8, a[0..3]:  a0 (group,   tig)  a1 (group+8, tig)
//                     a2 (group, tig+4)  a3 (group+8, tig+4)
//   B 8x8,  b[0..1]:  b0 (k=tig, n=group)  b1 (k=tig+4, n=group)
// m16n8k16 .row.col .f32.bf16.bf16.f32 (two bf16 per 32-bit register, the
// lower-numbered element in the low half):
//   A 16x16, a[0..3] = elements a0..a7; a_i at row group (+8 for i in
//                     {2,3,6,7}), col tig*2 + (i & 1) (+8 for i >= 4)
//   B 16x8,  b[0..1] = elements b0..b3; b_i at k = tig*2 + (i & 1) (+8 for
//                     i >= 2), n = group
// C and D (16x8 f32, both shapes), c[0..3]: c_i at row group (+8 for i >= 2),
//   col tig*2 + (i & 1).
//
// Arithmetic. A tf32 operand is the f32 register with its low 13 mantissa bits
// dropped (truncation): the PTX ISA does not define what the tensor core does
// with those bits, and truncation is what a raw f32 register amounts to on the
// hardware. Kernels convert with cvt.rna.tf32.f32 (round to nearest, ties away
// from zero) before the mma, so for them the choice never matters. bf16
// operands are exact by construction. Each product is exact (11 x 11 or
// 8 x 8 significant bits fit a double), the K products and C are summed in
// double and rounded once to f32. The PTX ISA leaves the tensor core's internal
// accumulation order and width unspecified, so compare a kernel's result with
// a tolerance, never bit for bit against the hardware.
#include <array>
#include <bit>
#include <cstdint>

#include "convkit/sim/runtime.h"

namespace convkit::sim {

// cvt.rna.tf32.f32: round to 10 mantissa bits, to nearest with ties away from
// zero; the result is an f32 bit pattern whose low 13 bits are zero. NaN stays
// NaN (made quiet) and infinities stay; a finite value may round up to infinity.
inline std::uint32_t tf32_round_rna(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7f800000u) == 0x7f800000u) {
    // Inf keeps its bits; NaN keeps sign and payload top bits, made quiet.
    return (bits & 0x007fffffu) == 0 ? bits : ((bits | 0x00400000u) & ~0x1fffu);
  }
  // Adding half an ulp of the result to the magnitude bits rounds ties away
  // from zero; a carry into the exponent is the right answer (incl. to Inf).
  return (bits + 0x1000u) & ~0x1fffu;
}

// What the tensor core reads from a tf32 operand register: the top 19 bits.
inline float tf32_operand(std::uint32_t bits) { return std::bit_cast<float>(bits & ~0x1fffu); }

// cvt.rn.bf16.f32: round to 7 mantissa bits, to nearest with ties to even;
// the bf16 bits are the top half of the f32 result. NaN stays a quiet NaN.
inline std::uint16_t bf16_round_rne(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  const std::uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7fffu + lsb) >> 16);
}

inline float bf16_to_float(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

// cvt.rn.bf16x2.f32 d, hi, lo: two bf16 in one register, `lo` in the low half.
inline std::uint32_t pack_bf16x2(float lo, float hi) {
  return static_cast<std::uint32_t>(bf16_round_rne(lo)) | (static_cast<std::uint32_t>(bf16_round_rne(hi)) << 16);
}

enum class MmaShape : int { m16n8k8_tf32 = 1, m16n8k16_bf16 = 2 };

// One lane's registers for an mma.sync: 4 of A, 2 of B, 4 of C in; 4 of D out.
// D may alias C.
struct MmaLane {
  const std::uint32_t* a;
  const std::uint32_t* b;
  const float* c;
  float* d;
};

namespace detail {
// Computes D for the whole warp from every lane's fragments (src/sim/mma.cpp).
// Called by the lane that completes the warp's mma group, while the others
// are parked, so reading and writing their registers is safe.
void mma_sync_warp(MmaShape shape, const std::array<MmaLane*, 32>& lanes);
}  // namespace detail

// The warp-collective entry points; every lane of the warp must call the same
// one (mma.sync.aligned).
inline void mma_sync(MmaShape shape, float* d, const std::uint32_t* a, const std::uint32_t* b, const float* c,
                     const char* file, int line) {
  MmaLane lane{a, b, c, d};
  detail::warp_op(detail::WarpOpKind::mma, 0xffffffffu,
                  static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&lane)), static_cast<int>(shape), 32,
                  file, line);
}

}  // namespace convkit::sim
