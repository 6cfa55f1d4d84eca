#pragma once
// K-major wgmma stages filled from registers: the 4-float loads that fill
// the registers (zeros past an operand's edge), where an element goes, and
// a thread's 4 x 4 block of an x-contiguous operand stored transposed,
// without bank conflicts. Shared by tensor-core GEMM v7
// (kernels/gemm_tensor_core.cu) and the tensor-core conv's version 5
// backward-weights (kernels/conv2d_implicit_gemm_channels_last.cuh).
//
// A stage holds 128 rows x (rows of the tile: m or n) of 32 elements of k:
// tf32 rows of 128 bytes in the 128-byte swizzle, bf16 rows of 64 bytes in
// the 64-byte swizzle (dev::swizzle128_descriptor, and the 512-byte atoms of
// the 64-byte one). Elements k = 4kq..4kq+3 of row x are one 16-byte unit
// (tf32) or half of one (bf16).
//
// The transposed store: 256 threads cover 128 x by 32 k as 4 x 4 blocks,
// thread t at x = 4 block_x(), k = 4 block_k(), with the two lanes of a pair
// on neighbouring block_k (a bf16 store phase then covers both halves of a
// 16-byte unit). A block is loaded along x (four 16-byte loads at four k)
// and stored as four rows of 4 k. Which of its four rows a lane stores first
// rotates with the lane, so that the 8 (16-byte stores) or 16 (8-byte) lanes
// of a phase land on distinct banks: (e + lane / 2) % 4 for tf32,
// (e + lane / 4) % 4 for bf16 (found by enumerating the phases; the sim
// profile tests of both users count no conflict).
#include "convkit/sim/cuda_compat.h"
#include "kernels/tensor_core.cuh"
#include "kernels/tensor_core_precision.cuh"
#include "kernels/vector_access.cuh"

namespace convkit::CK_GPU_NS::warpgroup_stage {

// Byte offset, in a stage of precision P, of k = 4kq..4kq+3 of row x.
template <TensorCorePrecision P>
__device__ __forceinline__ int offset(int x, int kq) {
  if constexpr (P == TensorCorePrecision::tf32) {
    return x * 128 + ((kq ^ (x % 8)) * 16);
  } else {
    return x * 64 + (((kq / 2) ^ ((x % 8) >> 1)) * 16) + (kq % 2) * 8;
  }
}

// Converts X(x, 4kq..4kq+3) (tf32: cvt.rna; bf16: nearest even, in pairs)
// and stores it at its place in the stage. Rounded: the values are tf32
// already (rounded where they were copied), stored as they are.
template <TensorCorePrecision P, bool Rounded = false>
__device__ __forceinline__ void store4(unsigned char* stage, int x, int kq, const float* v) {
  static_assert(!Rounded || P == TensorCorePrecision::tf32, "only tf32 values can arrive rounded");
  if constexpr (P == TensorCorePrecision::tf32) {
    float r[4];
    CK_UNROLL
    for (int e = 0; e < 4; ++e) r[e] = Rounded ? v[e] : dev::tf32_rounded(v[e]);
    dev::store16(reinterpret_cast<float*>(stage + offset<P>(x, kq)), r);
  } else {
    const float w[2] = {__uint_as_float(dev::pack_bf16x2(v[0], v[1])), __uint_as_float(dev::pack_bf16x2(v[2], v[3]))};
    dev::store8(reinterpret_cast<float*>(stage + offset<P>(x, kq)), w);
  }
}

// Four floats from p into v, of which `inside` (0..4) lie in the operand
// (the rest are zeros): one 16-byte load when all four do and Vec (p 16-byte
// aligned), else one by one.
template <bool Vec>
__device__ __forceinline__ void load4(const float* p, int inside, float* v) {
  if (Vec && inside == 4) {
    dev::load16(p, v);
  } else {
    CK_UNROLL
    for (int e = 0; e < 4; ++e) v[e] = e < inside ? p[e] : 0.0f;
  }
}

// This thread's 4 x 4 block of the 128 x 32 stage (256 threads).
__device__ __forceinline__ int block_x() {
  return static_cast<int>(16 * (threadIdx.x / 32 % 2) + threadIdx.x % 32 / 2);
}
__device__ __forceinline__ int block_k() { return static_cast<int>(2 * (threadIdx.x / 64) + threadIdx.x % 2); }

// Stores v[kk][e] = X(4 block_x() + e, 4 block_k() + kk), transposed and
// converted (as store4), in the rotated order above.
template <TensorCorePrecision P, bool Rounded = false>
__device__ __forceinline__ void store_block_transposed(unsigned char* stage, const float (&v)[4][4]) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int turn = P == TensorCorePrecision::tf32 ? lane / 2 : lane / 4;
  CK_UNROLL
  for (int e = 0; e < 4; ++e) {
    const int s = (e + turn) % 4;  // the block's row this lane stores now
    float u[4];
    CK_UNROLL
    for (int kk = 0; kk < 4; ++kk) u[kk] = s == 0 ? v[kk][0] : s == 1 ? v[kk][1] : s == 2 ? v[kk][2] : v[kk][3];
    store4<P, Rounded>(stage, 4 * block_x() + s, block_k(), u);
  }
}

}  // namespace convkit::CK_GPU_NS::warpgroup_stage
