// Dynamic shared memory: size, alignment, per-block poisoning, and use as a
// block-wide scratch buffer.
#include <cstdint>

#include "convkit/sim/cuda_compat.h"
#include "kernels/test_kernels.h"

namespace sim_test_kernels {
namespace {

__global__ void probe_kernel(SharedProbe* probes) {
  CK_DYNAMIC_SHARED(unsigned char, bytes);
  SharedProbe& probe = probes[blockIdx.x];
  const std::size_t size = convkit::sim::dynamic_shared_bytes();  // a sim-only query

  if (threadIdx.x == 0) {
    // Looks before anyone writes: every byte must still hold the poison.
    int poisoned = 1;
    for (std::size_t i = 0; i < size; ++i) poisoned &= bytes[i] == 0xFF;
    probe.poisoned = poisoned;
    probe.bytes = size;
    probe.aligned = reinterpret_cast<std::uintptr_t>(bytes) % 16 == 0;
  }
  __syncthreads();

  // Use it: each thread stores its index, thread 0 adds them up. Leaves the
  // buffer dirty, so the next block proves the poison is laid again.
  CK_DYNAMIC_SHARED(int, values);
  const unsigned capacity = static_cast<unsigned>(size / sizeof(int));
  if (threadIdx.x < capacity) values[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned n = capacity < blockDim.x ? capacity : blockDim.x;
    long long sum = 0;
    for (unsigned i = 0; i < n; ++i) sum += values[i];
    probe.sum_ok = sum == static_cast<long long>(n) * (n - 1) / 2;
  }
}

}  // namespace

void probe_dynamic_shared(unsigned blocks, unsigned threads, std::size_t bytes,
                          SharedProbe* probes, std::size_t opt_in) {
  convkit::allow_dynamic_shared(probe_kernel, opt_in);
  convkit::launch(probe_kernel, dim3(blocks), dim3(threads), bytes, nullptr, probes);
}

}  // namespace sim_test_kernels
