#pragma once
// Warp-level building blocks shared by the reduction, softmax, batch-norm and
// Winograd kernels: shuffles spelled once for every accumulator type, and the two warp
// reductions (to lane 0 with __shfl_down_sync, to every lane with
// __shfl_xor_sync). Every caller runs them with all 32 lanes of the warp
// present: blocks are whole warps, and lanes without data hold the identity.
#include <cstdint>

#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

inline constexpr int kWarpSize = 32;
inline constexpr unsigned kFullWarp = 0xffffffffu;

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x % kWarpSize; }

// Grid-stride loop bounds over a 1-D grid of 1-D blocks.
__device__ __forceinline__ std::int64_t grid_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_threads() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

__device__ __forceinline__ float shfl_down(float v, unsigned delta) {
  return __shfl_down_sync(kFullWarp, v, delta);
}
__device__ __forceinline__ double shfl_down(double v, unsigned delta) {
  return __shfl_down_sync(kFullWarp, v, delta);
}
__device__ __forceinline__ std::int64_t shfl_down(std::int64_t v, unsigned delta) {
  return static_cast<std::int64_t>(__shfl_down_sync(kFullWarp, static_cast<long long>(v), delta));
}
__device__ __forceinline__ float shfl_up(float v, unsigned delta) { return __shfl_up_sync(kFullWarp, v, delta); }
__device__ __forceinline__ double shfl_up(double v, unsigned delta) { return __shfl_up_sync(kFullWarp, v, delta); }
__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(kFullWarp, v, mask); }
__device__ __forceinline__ double shfl_xor(double v, int mask) { return __shfl_xor_sync(kFullWarp, v, mask); }
__device__ __forceinline__ std::int64_t shfl_xor(std::int64_t v, int mask) {
  return static_cast<std::int64_t>(__shfl_xor_sync(kFullWarp, static_cast<long long>(v), mask));
}

// Tree over the warp in five shuffle steps (16, 8, 4, 2, 1): lane l combines
// its value with lane l + delta's, so lane 0 ends with combine over all 32
// lanes. Lanes above 0 end with partial results. `combine` must be
// associative; Acc needs a shfl_down overload.
template <typename Acc, typename Combine>
__device__ __forceinline__ Acc warp_reduce_down(Acc a, Combine combine) {
  for (unsigned delta = kWarpSize / 2; delta > 0; delta /= 2) a = combine(a, shfl_down(a, delta));
  return a;
}

// Butterfly over the warp: after the five xor steps every lane holds the
// combination of all 32 values, which saves broadcasting lane 0's result when
// every lane needs it (softmax's max and sum). Also for commutative combines only.
template <typename Acc, typename Combine>
__device__ __forceinline__ Acc warp_reduce_all(Acc a, Combine combine) {
  for (int mask = kWarpSize / 2; mask > 0; mask /= 2) a = combine(a, shfl_xor(a, mask));
  return a;
}

}  // namespace convkit::CK_GPU_NS
