// Kernels for measure_costs.cpp: each stresses one cost of the sim runtime.
#include "convkit/sim/cuda_compat.h"
#include "costs/cost_kernels.h"

namespace sim_cost_kernels {
namespace {

constexpr int kTile = 16;
constexpr int kReduceThreads = 256;

// Every __syncthreads parks the calling fiber: one switch per thread and round.
__global__ void barrier_kernel(int rounds) {
  for (int r = 0; r < rounds; ++r) __syncthreads();
}

// Every shuffle parks the lane until its warp has arrived.
__global__ void shuffle_kernel(int rounds, float* sink) {
  float v = static_cast<float>(threadIdx.x);
  for (int r = 0; r < rounds; ++r) v += __shfl_xor_sync(0xffffffffu, v, r & 31);
  if (v == -1.0f) *sink = v;  // keeps the loop alive
}

// No barrier: direct mode runs all threads of a block on one fiber.
__global__ void empty_kernel() {}

__global__ void sgemm_kernel(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, int n) {
  __shared__ SharedArray<float[kTile][kTile]> a_tile;
  __shared__ SharedArray<float[kTile][kTile]> b_tile;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int row = static_cast<int>(blockIdx.y) * kTile + ty;
  const int col = static_cast<int>(blockIdx.x) * kTile + tx;
  float acc = 0.0f;
  for (int t = 0; t < n; t += kTile) {
    a_tile[ty][tx] = a[row * n + t + tx];
    b_tile[ty][tx] = b[(t + ty) * n + col];
    __syncthreads();
    for (int i = 0; i < kTile; ++i) acc += a_tile[ty][i] * b_tile[i][tx];
    __syncthreads();
  }
  c[row * n + col] = acc;
}

// The classic block reduction: grid-stride sums, a shuffle tree per warp, the
// warp sums through shared memory, a last shuffle tree in warp 0.
__global__ void reduce_kernel(const float* __restrict__ x, std::size_t n, float* __restrict__ out) {
  __shared__ SharedArray<float[kReduceThreads / 32]> warp_sums;
  float sum = 0.0f;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    sum += x[i];
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
      sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) out[blockIdx.x] = sum;
  }
}

// One thread per (image, channel, output pixel), writing its 9 column entries
// of the column matrix [batch][channels * 9][height * width].
__global__ void im2col_kernel(const float* __restrict__ x, int batch, int channels, int height,
                              int width, float* __restrict__ columns) {
  const long long pixels = 1ll * height * width;
  const long long i = 1ll * blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= batch * channels * pixels) return;
  const int ox = static_cast<int>(i % width);
  const int oy = static_cast<int>(i / width % height);
  const long long image_channel = i / pixels;  // n * channels + c
  const float* plane = x + image_channel * pixels;
  float* out = columns + image_channel * 9 * pixels + oy * width + ox;
  for (int ky = 0; ky < 3; ++ky) {
    for (int kx = 0; kx < 3; ++kx) {
      const int iy = oy + ky - 1, ix = ox + kx - 1;
      const bool inside = iy >= 0 && iy < height && ix >= 0 && ix < width;
      out[(ky * 3 + kx) * pixels] = inside ? plane[iy * width + ix] : 0.0f;
    }
  }
}

}  // namespace

void barriers(unsigned threads, int rounds) {
  convkit::launch(barrier_kernel, dim3(1), dim3(threads), 0, nullptr, rounds);
}

void shuffles(unsigned threads, int rounds, float* sink) {
  convkit::launch(shuffle_kernel, dim3(1), dim3(threads), 0, nullptr, rounds, sink);
}

void empty_threads(unsigned blocks, unsigned threads) {
  convkit::launch(empty_kernel, dim3(blocks), dim3(threads), 0, nullptr);
}

void sgemm_tiled(const float* a, const float* b, float* c, int n) {
  convkit::launch(sgemm_kernel, dim3(n / kTile, n / kTile), dim3(kTile, kTile), 0, nullptr, a, b, c,
                  n);
}

void reduce_sum(const float* x, std::size_t n, float* partials, float* result) {
  constexpr unsigned kBlocks = 256;
  convkit::launch(reduce_kernel, dim3(kBlocks), dim3(kReduceThreads), 0, nullptr, x, n, partials);
  convkit::launch(reduce_kernel, dim3(1), dim3(kReduceThreads), 0, nullptr,
                  static_cast<const float*>(partials), std::size_t{kBlocks}, result);
}

void im2col_3x3(const float* x, int batch, int channels, int height, int width, float* columns) {
  const long long total = 1ll * batch * channels * height * width;
  const unsigned blocks = static_cast<unsigned>((total + 255) / 256);
  convkit::launch(im2col_kernel, dim3(blocks), dim3(256), 0, nullptr, x, batch, channels, height,
                  width, columns);
}

}  // namespace sim_cost_kernels
