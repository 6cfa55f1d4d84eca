// Kernels whose memory traffic is known by hand, for the sim performance
// model's tests (profile_test.cpp): each comment says what a GPU does.
#include "convkit/sim/cuda_compat.h"
#include "kernels/device_math.cuh"
#include "kernels/vector_access.cuh"
#include "kernels/test_kernels.h"

namespace sim_test_kernels {
namespace {

constexpr int kTile = 32;

// Lane i of a warp reads word i: one request per warp touches 128 contiguous
// bytes, 4 sectors, all of them used.
__global__ void coalesced_copy(const float* in, float* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];
}

// Lane i reads word 32 i: each lane lands in its own sector, 32 per request,
// of which 4 bytes in 32 are used.
__global__ void strided_copy(const float* in, float* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i * kTile];
}

// A 32 x 32 transpose through shared memory, one warp per row. The row write
// tile[ty][tx] is conflict-free; the column read tile[tx][ty] puts all 32
// lanes in one bank (32-way) unless the row is padded to 33 words.
template <int Pitch>
__global__ void transpose(const float* in, float* out) {
  __shared__ SharedArray<float[kTile][Pitch]> tile;
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  tile[ty][tx] = in[ty * kTile + tx];
  __syncthreads();
  out[ty * kTile + tx] = tile[tx][ty];
}

// Only even lanes copy: one request per warp with 16 lanes active, which
// still touches all four sectors of the warp's 128 bytes. (An else branch
// doing the same access would not do: the compiler hoists the common load and
// store out of both branches, g++ as nvcc would.)
__global__ void divergent_copy(const float* in, float* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i % 2 == 0) out[i] = in[i];
}

// Thread i sums x[j] * y[j] over n terms: n multiply-adds per thread.
__global__ void dot_products(const float* x, const float* y, float* out, int n) {
  float acc = 0.0f;
  for (int j = 0; j < n; ++j) acc = convkit::CK_GPU_NS::dev::fma(x[j], y[j], acc);
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Lane (g = lane / 4, t = lane % 4) reads the two floats at g * Pitch + 2t in
// one 8-byte load, as a bf16 fragment read does: 256 bytes, served as two
// half-warps of 128. Pitch 40 spreads each half-warp over the 32 banks; with
// pitch 36 rows g and g + 1 overlap by four banks within a half-warp (2-way),
// though over the whole warp no bank holds more than two words.
template <int Pitch>
__global__ void pair_reads(float* out) {
  __shared__ SharedArray<float[8 * Pitch]> rows;
  for (int i = static_cast<int>(threadIdx.x); i < 8 * Pitch; i += 32) rows[i] = static_cast<float>(i);
  __syncthreads();
  const int g = static_cast<int>(threadIdx.x) / 4, t = static_cast<int>(threadIdx.x) % 4;
  float pair[2];
  const float* base = rows;
  convkit::CK_GPU_NS::dev::load8(base + g * Pitch + 2 * t, pair);
  out[threadIdx.x] = pair[0] + pair[1];
}

}  // namespace

void profile_pair_reads(float* out, int pitch) {
  if (pitch == 40) {
    convkit::launch(pair_reads<40>, dim3(1), dim3(32), 0, nullptr, out);
  } else {
    CK_CHECK(pitch == 36, "profile_pair_reads: pitch 36 or 40, not ", pitch);
    convkit::launch(pair_reads<36>, dim3(1), dim3(32), 0, nullptr, out);
  }
}
void profile_coalesced_copy(const float* in, float* out, unsigned blocks, unsigned threads) {
  convkit::launch(coalesced_copy, dim3(blocks), dim3(threads), 0, nullptr, in, out);
}
void profile_strided_copy(const float* in, float* out, unsigned blocks, unsigned threads) {
  convkit::launch(strided_copy, dim3(blocks), dim3(threads), 0, nullptr, in, out);
}
void profile_transpose(const float* in, float* out, bool padded) {
  if (padded) {
    convkit::launch(transpose<kTile + 1>, dim3(1), dim3(kTile, kTile), 0, nullptr, in, out);
  } else {
    convkit::launch(transpose<kTile>, dim3(1), dim3(kTile, kTile), 0, nullptr, in, out);
  }
}
void profile_divergent_copy(const float* in, float* out, unsigned blocks, unsigned threads) {
  convkit::launch(divergent_copy, dim3(blocks), dim3(threads), 0, nullptr, in, out);
}
void profile_dot_products(const float* x, const float* y, float* out, int n, unsigned blocks, unsigned threads) {
  convkit::launch(dot_products, dim3(blocks), dim3(threads), 0, nullptr, x, y, out, n);
}

}  // namespace sim_test_kernels
