#pragma once
// How a kernel sees a tensor: element pointer aside, its sizes and strides (in
// elements) by value, so a launch needs no device-side metadata allocation.
// Broadcast inputs have stride 0. Shared by every kernel family.
#include <cstdint>

#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

inline constexpr int kMaxDims = 8;

struct StridedView {
  int rank = 0;
  bool contiguous = true;  // element i sits at offset i: the common, fast case
  std::int64_t size[kMaxDims] = {};
  std::int64_t stride[kMaxDims] = {};

  // Offset of the element with row-major linear index `i`.
  __host__ __device__ __forceinline__ std::int64_t offset(std::int64_t i) const {
    if (contiguous) return i;
    std::int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (i % size[d]) * stride[d];
      i /= size[d];
    }
    return off;
  }
};

// The SMs of an H100 SXM, the GPU the shape rules are tuned for (an H200 has
// as many), and two blocks for each: where a kernel splits its work to fill
// the GPU, it aims at kTwoBlocksPerSm blocks.
inline constexpr std::int64_t kSmCount = 132;
inline constexpr std::int64_t kTwoBlocksPerSm = 2 * kSmCount;

// Grid-stride launch shape: enough blocks to fill a large GPU, capped so that
// tiny tensors launch one block and the sim backend does not create a fiber
// per element of a huge tensor.
struct LaunchShape {
  unsigned blocks;
  unsigned threads;
};
inline LaunchShape grid_stride_shape(std::int64_t n, unsigned threads = 256, unsigned max_blocks = 1024) {
  const std::int64_t wanted = (n + threads - 1) / threads;
  const std::int64_t blocks = wanted < 1 ? 1 : (wanted > max_blocks ? max_blocks : wanted);
  return {static_cast<unsigned>(blocks), threads};
}

}  // namespace convkit::CK_GPU_NS
