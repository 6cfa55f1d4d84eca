// A tiled SGEMM, the textbook shared-memory kernel: each 16x16 block computes a
// 16x16 tile of C, walking along K one 16x16 tile of A and B at a time. The two
// __syncthreads per step are both essential, and the sim backend must notice
// when either is missing. This file also compiles with nvcc.
#include "convkit/sim/cuda_compat.h"
#include "kernels/test_kernels.h"

namespace sim_test_kernels {
namespace {

constexpr int kTile = 16;

template <bool kSyncAfterLoad, bool kSyncAfterUse>
__global__ void sgemm_tiled_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                   float* __restrict__ c, int m, int n, int k) {
  __shared__ SharedArray<float[kTile][kTile]> a_tile;
  __shared__ SharedArray<float[kTile][kTile]> b_tile;
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const int row = static_cast<int>(blockIdx.y) * kTile + ty;
  const int col = static_cast<int>(blockIdx.x) * kTile + tx;

  float acc = 0.0f;
  for (int t = 0; t < k; t += kTile) {
    // Each thread loads one element of each tile (zero outside the matrices).
    a_tile[ty][tx] = (row < m && t + tx < k) ? a[row * k + t + tx] : 0.0f;
    b_tile[ty][tx] = (t + ty < k && col < n) ? b[(t + ty) * n + col] : 0.0f;
    // Wait until the whole tile is loaded before anyone reads it.
    if constexpr (kSyncAfterLoad) __syncthreads();
    for (int i = 0; i < kTile; ++i) acc += a_tile[ty][i] * b_tile[i][tx];
    // Wait until everyone has read the tile before it is overwritten.
    if constexpr (kSyncAfterUse) __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

}  // namespace

void sgemm_tiled(SgemmBarriers barriers, const float* a, const float* b, float* c, int m, int n,
                 int k) {
  const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  const dim3 block(kTile, kTile);
  using convkit::launch;
  switch (barriers) {
    case SgemmBarriers::both:
      launch(sgemm_tiled_kernel<true, true>, grid, block, 0, nullptr, a, b, c, m, n, k);
      break;
    case SgemmBarriers::no_sync_after_load:
      launch(sgemm_tiled_kernel<false, true>, grid, block, 0, nullptr, a, b, c, m, n, k);
      break;
    case SgemmBarriers::no_sync_after_use:
      launch(sgemm_tiled_kernel<true, false>, grid, block, 0, nullptr, a, b, c, m, n, k);
      break;
  }
}

}  // namespace sim_test_kernels
