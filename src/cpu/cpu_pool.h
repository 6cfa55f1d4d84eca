#pragma once
// The CPU max-pool forward kernels, visible to the tests that check the 2x2
// stride-2 version against its generic twin.
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

// Any window, stride and padding; every output's value and the index of the
// winning input in its plane (the first maximum in row-major order; a NaN
// always takes over, as in PyTorch).
template <typename T>
void max_pool2d_generic(const T* x, T* y, std::int64_t* argmax, const PoolGeometry& g, const PoolWindow& w);

// The same for a 2x2 window with stride 2 and no padding, every window whole
// (2*OH <= H, 2*OW <= W).
template <typename T>
void max_pool2d_2x2s2(const T* x, T* y, std::int64_t* argmax, const PoolGeometry& g);

bool is_2x2_stride_2(const PoolWindow& w);

}  // namespace convkit::cpu
