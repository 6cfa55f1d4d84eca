// The worked example of docs/sim.md, "A performance model": a 1024 x 1024
// transpose through 32 x 32 shared tiles, with the tile's rows unpadded
// (32 floats) and padded (33). Build and run as docs/sim.md says.
#include "convkit/sim/cuda_compat.h"
#include "convkit/sim/runtime.h"
#include <cstdio>

constexpr int kTile = 32, kN = 1024;

template <int Pitch>
__global__ void transpose(const float* in, float* out) {
  __shared__ SharedArray<float[kTile][Pitch]> tile;
  const int x = blockIdx.x * kTile + threadIdx.x, y = blockIdx.y * kTile + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * kN + x];                   // row write
  __syncthreads();
  const int tx = blockIdx.y * kTile + threadIdx.x, ty = blockIdx.x * kTile + threadIdx.y;
  out[ty * kN + tx] = tile[threadIdx.x][threadIdx.y];                // column read
}

int main() {
  auto* in = static_cast<float*>(convkit::sim::global_allocate(kN * kN * sizeof(float)));
  auto* out = static_cast<float*>(convkit::sim::global_allocate(kN * kN * sizeof(float)));
  for (int i = 0; i < kN * kN; ++i) in[i] = static_cast<float>(i);
  const dim3 grid(kN / kTile, kN / kTile), block(kTile, kTile);
  convkit::launch(transpose<kTile>, grid, block, 0, nullptr, in, out);
  convkit::launch(transpose<kTile + 1>, grid, block, 0, nullptr, in, out);
  std::printf("out[1] = %g (in[%d])\n", out[1], kN);
  convkit::sim::global_free(in);
  convkit::sim::global_free(out);
}
