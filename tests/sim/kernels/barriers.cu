// Block barriers: the predicate forms, and the mistakes the sim must report
// (divergent barrier, a warp built-in waiting on lanes parked at a barrier, a
// trap, a launch from a kernel, a built-in called from host code).
#include "convkit/sim/cuda_compat.h"
#include "kernels/test_kernels.h"

namespace sim_test_kernels {
namespace {

__device__ unsigned linear_thread_index() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

__device__ unsigned linear_block_index() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

__global__ void barrier_predicates_kernel(const int* exits, const int* preds, int* counts,
                                          int* ands, int* ors) {
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned i = linear_block_index() * threads + linear_thread_index();
  if (exits[i]) return;  // exited threads take no part in later barriers
  counts[i] = __syncthreads_count(preds[i]);
  ands[i] = __syncthreads_and(preds[i]);
  ors[i] = __syncthreads_or(preds[i]);
}

// Each built-in below follows a statement that records the built-in's line, so
// the tests know which lines the error message must name.
__global__ void divergent_barrier_kernel(SourceLines* lines) {
  if (threadIdx.x < 16) {
    lines->first = __LINE__ + 1;
    __syncthreads();
  } else {
    lines->second = __LINE__ + 1;
    __syncthreads();
  }
}

__global__ void shuffle_waits_for_barrier_kernel(SourceLines* lines, int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x < 16) {
    lines->first = __LINE__ + 1;
    __syncthreads();
  } else {
    lines->second = __LINE__ + 1;
    v = __shfl_sync(0xffffffffu, v, 0);
  }
  out[threadIdx.x] = v;
}

__global__ void trap_kernel() {
  if (blockIdx.x == 1 && threadIdx.x == 3) __trap();
  __syncthreads();
}

__global__ void empty_kernel() {}

__global__ void launching_kernel() { convkit::launch(empty_kernel, dim3(1), dim3(1), 0, nullptr); }

}  // namespace

void barrier_predicates(Dim grid, Dim block, const int* exits, const int* preds, int* counts,
                        int* ands, int* ors) {
  convkit::launch(barrier_predicates_kernel, dim3(grid.x, grid.y, grid.z),
                  dim3(block.x, block.y, block.z), 0, nullptr, exits, preds, counts, ands, ors);
}

void divergent_barrier(SourceLines* lines) {
  convkit::launch(divergent_barrier_kernel, dim3(1), dim3(32), 0, nullptr, lines);
}

void shuffle_waits_for_barrier(SourceLines* lines) {
  int out[32];
  convkit::launch(shuffle_waits_for_barrier_kernel, dim3(1), dim3(32), 0, nullptr, lines, out);
}

void trap_in_one_thread() { convkit::launch(trap_kernel, dim3(4), dim3(8), 0, nullptr); }

void launch_from_kernel() { convkit::launch(launching_kernel, dim3(1), dim3(2), 0, nullptr); }

void syncthreads_outside_kernel() { __syncthreads(); }

}  // namespace sim_test_kernels
