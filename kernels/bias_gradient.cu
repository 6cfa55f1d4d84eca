// The convolution bias gradient: db[k] = sum over images n and output
// positions i of dy[n][k][i]. One block per output channel (grid-stride over
// channels), a fixed partition of the channel's values over the threads, and
// a fixed-order combination, so the bits never depend on scheduling.
//
// Floor: N*K*plane elements read once, as many adds; bandwidth-bound. For
// cifar10-cnn conv1 at batch 128 (K = 32, 128 x 32x32 positions) that is
// 16.8 MB, 4 us at 4.3 TB/s.
//
// v1 simple: 256 threads stride over the channel's N*plane values as one
//    flat range, stepping (n, i) by compares, then a shared-memory tree. Each
//    thread's loads follow one another: a load's address waits on the
//    compare chain of the one before, so about one load per thread is in
//    flight. The first H200 runs showed what that costs: every
//    backward-weights pass of cifar10-cnn's first layer took 0.19-0.31 ms
//    whatever the algorithm (docs/gpu/measured-h200.md), with this kernel's
//    512 dependent loads per thread (~150 us at ~600 cycles each) the common
//    part.
// v2 rows in flight: 512 threads (16 warps); warp w sums the image rows n =
//    w, w + 16, ..., its lanes walking a row 32 apart, 8 loads issued before
//    any is added. Every address is known up front, so each lane keeps 8
//    loads in flight and a block 4096: about 0.1 us per 8 loads per lane
//    instead of one load's latency each. Lanes combine by a shuffle tree,
//    warps by lane 0's partials added in warp order.
#include <algorithm>
#include <cstdint>

#include "convkit/backend/kernel_versions.h"
#include "kernels/bias_gradient.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/warp_reduce.cuh"

namespace convkit::CK_GPU_NS {

namespace {

constexpr int kVersions = 2;

// ---- v1, simple.
constexpr int kSimpleThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kSimpleThreads)
    bias_gradient_v1_simple(const T* __restrict__ dy, T* __restrict__ db, std::int64_t N, std::int64_t K,
                            std::int64_t plane) {
  __shared__ SharedArray<T[kSimpleThreads]> partial;
  const int tid = threadIdx.x;
  for (std::int64_t k = blockIdx.x; k < K; k += gridDim.x) {
    T sum = 0;
    std::int64_t n = tid / plane, i = tid % plane;
    while (n < N) {
      sum += dy[(n * K + k) * plane + i];
      i += kSimpleThreads;
      while (i >= plane) i -= plane, ++n;
    }
    partial[tid] = sum;
    __syncthreads();
    for (int half = kSimpleThreads / 2; half > 0; half /= 2) {
      if (tid < half) partial[tid] += partial[tid + half];
      __syncthreads();
    }
    if (tid == 0) db[k] = partial[0];
    __syncthreads();  // partial is rewritten for the next k
  }
}

// ---- v2, rows in flight.
constexpr int kRowThreads = 512;
constexpr int kRowWarps = kRowThreads / kWarpSize;
constexpr int kInFlight = 8;  // loads a lane issues before adding

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    bias_gradient_v2_rows(const T* __restrict__ dy, T* __restrict__ db, std::int64_t N, std::int64_t K,
                          std::int64_t plane) {
  __shared__ SharedArray<T[kRowWarps]> partial;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  for (std::int64_t k = blockIdx.x; k < K; k += gridDim.x) {
    T sum = 0;
    for (std::int64_t n = warp; n < N; n += kRowWarps) {
      const T* row = dy + (n * K + k) * plane;
      std::int64_t i = lane;
      for (; i + (kInFlight - 1) * kWarpSize < plane; i += kInFlight * kWarpSize) {
        T v[kInFlight];
        CK_UNROLL
        for (int j = 0; j < kInFlight; ++j) v[j] = row[i + j * kWarpSize];
        CK_UNROLL
        for (int j = 0; j < kInFlight; ++j) sum += v[j];
      }
      for (; i < plane; i += kWarpSize) sum += row[i];
    }
    sum = warp_reduce_down(sum, [](T a, T b) { return a + b; });
    if (lane == 0) partial[warp] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
      T total = partial[0];
      for (int w = 1; w < kRowWarps; ++w) total += partial[w];
      db[k] = total;
    }
    __syncthreads();  // partial is rewritten for the next k
  }
}

}  // namespace

void register_bias_gradient_family() {
  static const bool registered = [] {
    register_kernel_family({"bias_gradient", kVersions, 2,
                            "v1 simple: one block per channel, 256 threads striding over its values, one load in "
                            "flight each, a shared-memory tree\n"
                            "v2 rows in flight: one block per channel, a warp per image row, 8 loads in flight per "
                            "lane, shuffle and warp-order sums"});
    return true;
  }();
  (void)registered;
}

void launch_bias_gradient(DType dtype, const void* dy, std::int64_t N, std::int64_t K, std::int64_t plane, void* db,
                          int version) {
  register_bias_gradient_family();
  CK_CHECK(version >= 0 && version <= kVersions, "bias_gradient: versions are 1..", kVersions, ", got ", version);
  CK_CHECK(N >= 0 && K >= 0 && plane >= 0, "bias_gradient: negative size (N ", N, ", K ", K, ", plane ", plane, ")");
  if (K == 0) return;
  CK_CHECK(db != nullptr && (dy != nullptr || N * plane == 0), "bias_gradient: null buffer");
  if (plane == 0) N = 0, plane = 1;  // every sum is empty; v1 divides by plane
  const int v = version == 0 ? kernel_version("bias_gradient") : version;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(K, 4096));
  dispatch_floating(dtype, "bias_gradient", [&](auto t) {
    using T = decltype(t);
    if (v == 1)
      launch(bias_gradient_v1_simple<T>, dim3(blocks), dim3(kSimpleThreads), 0, nullptr, static_cast<const T*>(dy),
             static_cast<T*>(db), N, K, plane);
    else
      launch(bias_gradient_v2_rows<T>, dim3(blocks), dim3(kRowThreads), 0, nullptr, static_cast<const T*>(dy),
             static_cast<T*>(db), N, K, plane);
  });
}

}  // namespace convkit::CK_GPU_NS
