#pragma once
// The geometry of the CPU max-pool forward kernels.
#include <cstdint>

#include "convkit/backend/kernel_params.h"
#include "convkit/core/tensor.h"

namespace convkit::cpu {

// Contiguous NCHW planes: count = N*C planes of H x W in, OH x OW out.
struct PoolGeometry {
  std::int64_t count, H, W, OH, OW;
};
inline PoolGeometry pool_geometry(const Tensor& in, const Tensor& out) {
  return {in.size(0) * in.size(1), in.size(2), in.size(3), out.size(2), out.size(3)};
}

// The kernels are each ISA copy's entry points (cpu/isa_entry_points.h).

// Whether max_pool2d_2x2s2 applies to `w`.
inline bool is_2x2_stride_2(const PoolWindow& w) {
  return w.kernel_h == 2 && w.kernel_w == 2 && w.stride_h == 2 && w.stride_w == 2 && w.pad_h == 0 &&
         w.pad_w == 0;
}

}  // namespace convkit::cpu
