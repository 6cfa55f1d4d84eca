#pragma once
// Kernels whose running time measures the sim runtime's costs; see
// measure_costs.cpp.
#include <cstddef>

namespace sim_cost_kernels {

// One block of `threads` threads, each passing `rounds` __syncthreads.
void barriers(unsigned threads, int rounds);
// One block of `threads` threads, each doing `rounds` __shfl_xor_sync.
void shuffles(unsigned threads, int rounds, float* sink);
// `blocks` x `threads` threads that do nothing.
void empty_threads(unsigned blocks, unsigned threads);
// C = A * B for n x n row-major matrices, 16x16 shared tiles.
void sgemm_tiled(const float* a, const float* b, float* c, int n);
// Sum of x[0..n) with a block reduction (warp shuffles, then shared memory),
// two launches: per-block partial sums, then their sum.
void reduce_sum(const float* x, std::size_t n, float* partials, float* result);
// Plain im2col of an NCHW batch, 3x3 kernel, stride 1, padding 1.
void im2col_3x3(const float* x, int batch, int channels, int height, int width, float* columns);

}  // namespace sim_cost_kernels
