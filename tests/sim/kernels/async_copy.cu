// cp.async under sim (kernels/async_copy.cuh): one block of 64 threads fills
// two shared rows of 256 floats in two groups, then each thread reads its
// neighbour's values. The wait or the barrier can be left out, or the wait
// can keep the newest group in flight, to show what each omission does.
#include "convkit/sim/cuda_compat.h"
#include "kernels/async_copy.cuh"
#include "kernels/test_kernels.h"

namespace sim_test_kernels {
namespace {

namespace dev = convkit::CK_GPU_NS::dev;

constexpr int kThreads = 64;
constexpr int kRow = 4 * kThreads;

__global__ void async_copy_kernel(const float* src, int n_valid, float* out, AsyncCopyMode mode, bool poison) {
  __shared__ __align__(16) SharedArray<float[2][kRow]> tile;
  const int t = static_cast<int>(threadIdx.x);
  if (poison) {
    // What an earlier block left: the stale data a missing wait reads.
    for (int j = 0; j < 4; ++j) tile[0][4 * t + j] = tile[1][4 * t + j] = -7.0f;
    __syncthreads();
  }
  // Group 0: one 16-byte copy per thread, zero-filled past n_valid.
  const int valid0 = n_valid - 4 * t < 0 ? 0 : n_valid - 4 * t > 4 ? 4 : n_valid - 4 * t;
  dev::cp_async<16>(&tile[0][4 * t], valid0 > 0 ? src + 4 * t : src, 4 * valid0);
  dev::cp_async_commit();
  // Group 1: an 8-byte copy and two 4-byte ones per thread.
  const int e = kRow + 4 * t;
  const int valid8 = n_valid - e < 0 ? 0 : n_valid - e > 2 ? 2 : n_valid - e;
  dev::cp_async<8>(&tile[1][4 * t], valid8 > 0 ? src + e : src, 4 * valid8);
  for (int j = 2; j < 4; ++j) dev::cp_async<4>(&tile[1][4 * t + j], src + (e + j < n_valid ? e + j : 0), e + j < n_valid ? 4 : 0);
  dev::cp_async_commit();
  if (mode == AsyncCopyMode::wait_keeps_newest) dev::cp_async_wait<1>();
  else if (mode != AsyncCopyMode::no_wait) dev::cp_async_wait<0>();
  if (mode != AsyncCopyMode::no_barrier) __syncthreads();
  const int from = (t + 1) % kThreads;
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 4; ++j) out[r * kRow + 4 * from + j] = tile[r][4 * from + j];
}

__global__ void misaligned_copy_kernel(const float* src) {
  __shared__ __align__(16) SharedArray<float[8]> tile;
  dev::cp_async<16>(&tile[1], src, 16);
  dev::cp_async_commit();
  dev::cp_async_wait<0>();
}

}  // namespace

void async_copy(const float* src, int n_valid, float* out, AsyncCopyMode mode, bool poison) {
  convkit::launch(async_copy_kernel, dim3(1), dim3(kThreads), 0, nullptr, src, n_valid, out, mode, poison);
}

void async_copy_misaligned(const float* src) {
  convkit::launch(misaligned_copy_kernel, dim3(1), dim3(1), 0, nullptr, src);
}

}  // namespace sim_test_kernels
