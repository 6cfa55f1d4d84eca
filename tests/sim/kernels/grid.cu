// Grid geometry: every (blockIdx, threadIdx) pair of 1-D, 2-D and 3-D launches,
// and the order in which a block's threads run.
#include "convkit/sim/cuda_compat.h"
#include "kernels/test_kernels.h"

namespace sim_test_kernels {
namespace {

__global__ void record_indices_kernel(dim3 expected_grid, dim3 expected_block, unsigned* hits,
                                      int* bad) {
  const bool geometry_ok = gridDim.x == expected_grid.x && gridDim.y == expected_grid.y &&
                           gridDim.z == expected_grid.z && blockDim.x == expected_block.x &&
                           blockDim.y == expected_block.y && blockDim.z == expected_block.z;
  const bool in_range = threadIdx.x < blockDim.x && threadIdx.y < blockDim.y &&
                        threadIdx.z < blockDim.z && blockIdx.x < gridDim.x &&
                        blockIdx.y < gridDim.y && blockIdx.z < gridDim.z;
  if (!geometry_ok || !in_range) {
    atomicExch(bad, 1);
    return;
  }
  const unsigned long long block =
      blockIdx.x + gridDim.x * (blockIdx.y + 1ull * gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned threads_per_block = blockDim.x * blockDim.y * blockDim.z;
  atomicAdd(&hits[block * threads_per_block + thread], 1u);
}

__global__ void record_order_kernel(unsigned* order_before, unsigned* order_after,
                                    unsigned* counters) {
  order_before[atomicAdd(&counters[0], 1u)] = threadIdx.x;
  __syncthreads();
  order_after[atomicAdd(&counters[1], 1u)] = threadIdx.x;
}

}  // namespace

void record_indices(Dim grid, Dim block, unsigned* hits, int* bad) {
  const dim3 g(grid.x, grid.y, grid.z);
  const dim3 b(block.x, block.y, block.z);
  convkit::launch(record_indices_kernel, g, b, 0, nullptr, g, b, hits, bad);
}

void record_order(unsigned threads, unsigned* order_before, unsigned* order_after) {
  unsigned counters[2] = {0, 0};
  convkit::launch(record_order_kernel, dim3(1), dim3(threads), 0, nullptr, order_before,
                  order_after, counters);
}

}  // namespace sim_test_kernels
