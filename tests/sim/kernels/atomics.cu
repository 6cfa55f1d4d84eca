// Atomics from many blocks at once. Under sim the blocks run on several OS
// threads, so every update below races with others for real.
#include "convkit/sim/cuda_compat.h"
#include "kernels/test_kernels.h"

namespace sim_test_kernels {
namespace {

__global__ void atomic_totals_kernel(AtomicTotals* totals) {
  const int index = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(&totals->int_sum, 1);
  atomicAdd(&totals->ull_sum, 1ull);
  atomicAdd(&totals->float_sum, 1.0f);
  atomicAdd(&totals->double_sum, 1.0);
  // Increment through compare-and-swap, the way any custom atomic is built.
  unsigned old = totals->cas_sum;
  for (;;) {
    const unsigned seen = atomicCAS(&totals->cas_sum, old, old + 1);
    if (seen == old) break;
    old = seen;
  }
  atomicMax(&totals->max_index, index);
  atomicMin(&totals->min_index, index);
  atomicInc(&totals->inc_wrapped, 9u);
  atomicAdd(&totals->histogram[index % 16], 1u);
}

// Block 1 raises the flag; block 0 waits for it, but not forever: if the two
// blocks do not run at the same time, block 0 gives up and reports failure.
__global__ void concurrency_kernel(int* flag, int* seen) {
  if (blockIdx.x == 1) {
    atomicExch(flag, 1);
    return;
  }
  for (long long spin = 0; spin < (1ll << 31); ++spin) {
    if (atomicAdd(flag, 0) != 0) {
      *seen = 1;
      return;
    }
  }
}

}  // namespace

void atomic_totals(unsigned blocks, unsigned threads, AtomicTotals* totals) {
  convkit::launch(atomic_totals_kernel, dim3(blocks), dim3(threads), 0, nullptr, totals);
}

bool blocks_run_concurrently() {
  int flag = 0;
  int seen = 0;
  convkit::launch(concurrency_kernel, dim3(2), dim3(1), 0, nullptr, &flag, &seen);
  return seen != 0;
}

}  // namespace sim_test_kernels
