// Kernels with one planted bug each, for the sim checks (convkit/sim/check.h),
// and the correct kernels they are variants of. Each buggy line carries a
// `// BUG: name` marker: the tests find the line by it and expect the report
// to name it.
#include "convkit/sim/cuda_compat.h"
#include "kernels/test_kernels.h"

namespace sim_test_kernels {
namespace {

constexpr int kThreads = 32;

// Thread 31 reads tile[32], one past the end of the array.
__global__ void static_shared_overrun(float* out) {
  __shared__ SharedArray<float[kThreads]> tile;
  __shared__ SharedArray<float[kThreads]> neighbour;  // where the overrun lands
  const int t = threadIdx.x;
  tile[t] = static_cast<float>(t);
  neighbour[t] = 0.0f;
  __syncthreads();
  out[t] = tile[t + 1];  // BUG: static-overrun
}

// Thread 31 writes smem[32]; the launch asks for 32 floats.
__global__ void dynamic_shared_overrun(float* out) {
  CK_DYNAMIC_SHARED(float, smem);
  const int t = threadIdx.x;
  smem[t + 1] = static_cast<float>(t);  // BUG: dynamic-overrun
  __syncthreads();
  out[t] = smem[t];
}

// Each thread keeps four partial values in a local array and reads back the
// one `pick` names; pick = 4 is one past the end.
__global__ void local_overrun(const int* pick, float* out) {
  float partial[4];
  const int t = threadIdx.x;
  for (int i = 0; i < 4; ++i) partial[i] = static_cast<float>(t * i);
  out[t] = partial[pick[t]];  // BUG: local-overrun
}

// `<=` where `<` belongs: the last thread stores out[n].
__global__ void global_overrun(float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= n) out[i] = 1.0f;  // BUG: global-overrun
}

// Every thread adds 1 to one shared counter without an atomic. Under sim each
// thread runs its read-modify-write alone, so the count comes out right; a
// GPU loses updates.
__global__ void lost_update(int* out, bool use_atomic) {
  __shared__ SharedArray<int[1]> count;
  if (threadIdx.x == 0) count[0] = 0;
  __syncthreads();
  if (use_atomic) {
    atomicAdd(&count[0], 1);
  } else {
    count[0] += 1;  // BUG: lost-update
  }
  __syncthreads();
  if (threadIdx.x == 0) *out = count[0];
}

// Each thread publishes its index and reads its left neighbour's, with the
// barrier between the two left out when `barrier` is false. In forward order
// the neighbour has always written already, so the answer is right anyway.
__global__ void neighbour_exchange(int* out, bool barrier) {
  __shared__ SharedArray<int[kThreads]> published;
  const int t = threadIdx.x;
  published[t] = t;  // BUG: raw-write
  if (barrier) __syncthreads();
  out[t] = t > 0 ? published[t - 1] : -1;  // BUG: raw-read
}

// Tree sum of one warp's values in shared memory, the pre-Volta way: without
// __syncwarp between the steps (`syncwarp` false), lanes of one warp are not
// ordered, and a lane may read a partial sum before or after it is updated.
__global__ void warp_sum(const int* in, int* out, bool syncwarp) {
  __shared__ SharedArray<int[kThreads]> partial;
  const int lane = threadIdx.x;
  partial[lane] = in[lane];
  __syncwarp();
  for (int offset = kThreads / 2; offset > 0; offset /= 2) {
    if (lane < offset) partial[lane] += partial[lane + offset];  // BUG: warp-sync
    if (syncwarp) __syncwarp();
  }
  if (lane == 0) *out = partial[0];
}

// Only the first half of the threads fill the tile; everyone reads its own
// entry after the barrier.
__global__ void uninitialised_read(float* out, bool fill_all) {
  __shared__ SharedArray<float[2 * kThreads]> tile;
  const int t = threadIdx.x;
  if (fill_all || t < kThreads) tile[t] = 1.0f;
  __syncthreads();
  out[t] = tile[t];  // BUG: uninitialised
}

// Every block stores its index into out[0]: blocks race with one another. With
// `use_atomic` they take the maximum through atomicMax instead.
__global__ void blocks_share_a_word(int* out, bool use_atomic) {
  if (threadIdx.x != 0) return;
  if (use_atomic) {
    atomicMax(out, static_cast<int>(blockIdx.x));
  } else {
    *out = static_cast<int>(blockIdx.x);  // BUG: cross-block
  }
}

}  // namespace

void planted_static_shared_overrun(float* out) {
  convkit::launch(static_shared_overrun, dim3(1), dim3(kThreads), 0, nullptr, out);
}
void planted_dynamic_shared_overrun(float* out) {
  convkit::launch(dynamic_shared_overrun, dim3(1), dim3(kThreads), kThreads * sizeof(float), nullptr, out);
}
void planted_local_overrun(const int* pick, float* out) {
  convkit::launch(local_overrun, dim3(1), dim3(kThreads), 0, nullptr, pick, out);
}
void planted_global_overrun(float* out, int n) {
  convkit::launch(global_overrun, dim3((n + kThreads) / kThreads), dim3(kThreads), 0, nullptr, out, n);
}
void planted_lost_update(int* out, unsigned threads, bool use_atomic) {
  convkit::launch(lost_update, dim3(1), dim3(threads), 0, nullptr, out, use_atomic);
}
void planted_neighbour_exchange(int* out, bool barrier) {
  convkit::launch(neighbour_exchange, dim3(1), dim3(kThreads), 0, nullptr, out, barrier);
}
void planted_warp_sum(const int* in, int* out, bool syncwarp) {
  convkit::launch(warp_sum, dim3(1), dim3(kThreads), 0, nullptr, in, out, syncwarp);
}
void planted_uninitialised_read(float* out, bool fill_all) {
  convkit::launch(uninitialised_read, dim3(1), dim3(2 * kThreads), 0, nullptr, out, fill_all);
}
void planted_blocks_share_a_word(int* out, unsigned blocks, bool use_atomic) {
  convkit::launch(blocks_share_a_word, dim3(blocks), dim3(kThreads), 0, nullptr, out, use_atomic);
}

}  // namespace sim_test_kernels
