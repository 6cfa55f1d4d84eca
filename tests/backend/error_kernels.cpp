#include "convkit/sim/cuda_compat.h"

namespace convkit::kernel_error_test {

__global__ void fill_ones(float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = 1.0f;
}

__global__ void fail_in_block(float* out, int bad_block) {
  CK_CHECK(static_cast<int>(blockIdx.x) != bad_block, "block ", bad_block, " found a corrupt value");
  if (threadIdx.x == 0) out[blockIdx.x] = 2.0f;
}

void launch_fill_ones(unsigned grid, unsigned block, float* out, int n) {
  launch(fill_ones, dim3(grid), dim3(block), 0, nullptr, out, n);
}

void launch_fail_in_block(unsigned grid, unsigned block, float* out, int bad_block) {
  launch(fail_in_block, dim3(grid), dim3(block), 0, nullptr, out, bad_block);
}

}  // namespace convkit::kernel_error_test
