// Batch norm over x viewed as [N, C, S]: per-channel statistics and backward
// sums (reductions over the M = N * S elements of a channel), and the two
// elementwise maps (affine, input gradient).
//
// Floors: the statistics read x once (N * C * S * sizeof(T) bytes) for a few
// flops per element; backward_reduce reads x and grad_out once; affine and
// backward_input read one or two tensors and write one. All memory-bound.
//
// Fused relu(batch_norm(x) + residual) (batch_norm_add_relu), counted in
// whole-tensor reads and writes of E = N * C * S elements (float32: 4E bytes):
//   forward   stats (read x) + add_relu map (read x, residual; write out)
//             = 4 tensors, against 8 for bn -> add -> relu (stats; affine
//             reads x, writes y; add reads y, residual, writes z; relu reads
//             z, writes out): 16E bytes against 32E.
//   backward  relu_backward_reduce (read grad, out, x; write grad_masked, the
//             residual's gradient) + backward_input (read grad_masked, x;
//             write grad_x) = 7 tensors, against 8 unfused (relu backward reads
//             grad, out, writes grad_masked; add passes it on; the reduction
//             reads it and x; backward_input as here): 28E bytes against 32E.
// Two backward kernels are the floor: grad_x needs the channel sums, which
// need the whole channel. The second pass reads grad_masked (one tensor)
// rather than re-masking grad with out (two), and grad_masked must be written
// anyway as the residual's gradient. Saved for the backward: x and out (which
// the next layer holds anyway) and per-channel vectors; the unfused chain
// also allocates y and z.
//
// Channel c's elements are M / S runs of S contiguous values, C * S apart, so
// a reduction walks "element m of channel c" = x[(m / S) * C * S + c * S + m % S]
// with a cursor that steps (n, s) without dividing.
//
//   v1 thread_per_channel  a thread walks its channel: two passes for mean and
//                          variance. Obviously right, and C threads are far too
//                          few to fill a GPU (64 channels -> 64 threads).
//   v2 block_per_channel   a block per channel; neighbouring threads read
//                          neighbouring elements of a run (coalesced when S is
//                          large); each thread keeps a Welford state (count,
//                          mean, M2) in one pass, and the states meet pairwise
//                          by Chan's formula: five __shfl_down_sync steps per
//                          warp, then the warp results through shared memory.
//   v3 split_channels      when C blocks cannot fill the GPU, each channel is
//                          split over `splits` blocks that grid-stride through
//                          it and write partial (mean, M2); a second kernel
//                          merges each channel's partials in one warp. A
//                          partial's count is implied by the mapping, so only
//                          two numbers per block are stored.
//   v4 vector_maps         v3's reductions; the elementwise maps move 16 bytes
//                          per step where S is a multiple of that and the
//                          arrays are aligned, the channel found once per
//                          vector in 32-bit arithmetic, where v1-v3 divide an
//                          element's 64-bit index twice. Same bits as v3.
//
// Welford keeps float32 statistics accurate where a one-pass sum of squares
// would cancel: the error of the variance is about (elements per thread +
// log2(threads)) * eps relative, independent of the mean's size.
#include "kernels/batchnorm.cuh"

#include <initializer_list>
#include <type_traits>

#include "convkit/backend/batch_norm_math.h"
#include "convkit/backend/kernel_versions.h"
#include "kernels/dispatch.cuh"
#include "kernels/tensor_view.cuh"
#include "kernels/vector_access.cuh"
#include "kernels/warp_reduce.cuh"

namespace convkit::CK_GPU_NS {

namespace {

constexpr unsigned kBlockThreads = 256;
constexpr unsigned kMaxGridX = 65535;
constexpr unsigned kTargetBlocks = 1024;   // ~8 resident 256-thread blocks on each of 132 SMs (H100)
constexpr std::int64_t kPerThreadMin = 16;  // a split leaves each thread at least this many elements

struct ChannelGeometry {
  std::int64_t N, C, S;
};

// Calls f(offset of channel c's element m) for m = first, first + step, ...
// below M, stepping (n, s) without a division per element.
template <typename F>
__device__ __forceinline__ void for_each_in_channel(ChannelGeometry g, std::int64_t c, std::int64_t first,
                                                    std::int64_t step, F&& f) {
  if (g.S == 0) return;  // no elements (and no division by zero)
  std::int64_t n = first / g.S, s = first % g.S;
  const std::int64_t dn = step / g.S, ds = step % g.S, plane = g.C * g.S;
  std::int64_t run = n * plane + c * g.S;  // offset of (n, c, 0)
  while (n < g.N) {
    f(run + s);
    n += dn;
    run += dn * plane;
    s += ds;
    if (s >= g.S) {
      s -= g.S;
      ++n;
      run += plane;
    }
  }
}

// ---- Welford states and Chan's pairwise merge.
template <typename T>
struct Welford {
  std::int64_t count;
  T mean;
  T m2;  // sum of squared deviations from the mean
};

template <typename T>
__device__ __forceinline__ Welford<T> add(Welford<T> w, T v) {
  ++w.count;
  const T d = v - w.mean;
  w.mean += d / static_cast<T>(w.count);
  w.m2 += d * (v - w.mean);
  return w;
}

template <typename T>
struct MergeWelford {
  __device__ __forceinline__ Welford<T> operator()(Welford<T> a, Welford<T> b) const {
    if (b.count == 0) return a;
    if (a.count == 0) return b;
    const std::int64_t n = a.count + b.count;
    const T delta = b.mean - a.mean;
    const T wb = static_cast<T>(b.count) / static_cast<T>(n);
    return {n, a.mean + delta * wb, a.m2 + b.m2 + delta * delta * static_cast<T>(a.count) * wb};
  }
};

template <typename T>
__device__ __forceinline__ Welford<T> shfl_down(Welford<T> w, unsigned delta) {
  return {CK_GPU_NS::shfl_down(w.count, delta), CK_GPU_NS::shfl_down(w.mean, delta),
          CK_GPU_NS::shfl_down(w.m2, delta)};
}

struct Add {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};

// A block's combination of one value per thread, valid in thread 0: shuffles
// within each warp, warp leaders through shared memory, warp 0 finishes. Acc
// is deduced from the values alone: warp_partial may be a SharedArray, which
// converts to a pointer but cannot be deduced from.
template <typename Acc, typename Combine>
__device__ __forceinline__ Acc block_reduce(Acc a, Acc identity, Combine combine,
                                            std::type_identity_t<Acc>* warp_partial) {
  const unsigned lane = lane_id(), warp = threadIdx.x / kWarpSize, warps = blockDim.x / kWarpSize;
  a = warp_reduce_down(a, combine);
  if (lane == 0) warp_partial[warp] = a;
  __syncthreads();
  if (warp == 0) a = warp_reduce_down(lane < warps ? warp_partial[lane] : identity, combine);
  return a;
}

// Elements of channel c that block `split` of `splits` visits (B threads,
// element m goes to block (m / B) % splits): the count a partial stands for.
__device__ __forceinline__ std::int64_t split_count(std::int64_t M, std::int64_t B, std::int64_t split,
                                                    std::int64_t splits) {
  const std::int64_t round = B * splits, rem = M % round - split * B;
  return (M / round) * B + (rem < 0 ? 0 : (rem > B ? B : rem));
}

template <typename T>
__device__ __forceinline__ void write_stats(Welford<T> w, T* mean, T* var, std::int64_t c) {
  mean[c] = w.count > 0 ? w.mean : static_cast<T>(NAN);
  var[c] = w.count > 0 ? w.m2 / static_cast<T>(w.count) : static_cast<T>(NAN);
}

// ---- statistics, v1: a thread per channel, sum then squared deviations.
template <typename T>
__global__ void stats_v1_thread_per_channel(const T* x, ChannelGeometry g, T* mean, T* var) {
  const std::int64_t M = g.N * g.S;
  for (std::int64_t c = grid_thread(); c < g.C; c += grid_threads()) {
    T sum = 0;
    for (std::int64_t n = 0; n < g.N; ++n)
      for (std::int64_t s = 0; s < g.S; ++s) sum += x[(n * g.C + c) * g.S + s];
    const T mu = sum / static_cast<T>(M);
    T sq = 0;
    for (std::int64_t n = 0; n < g.N; ++n)
      for (std::int64_t s = 0; s < g.S; ++s) {
        const T d = x[(n * g.C + c) * g.S + s] - mu;
        sq += d * d;
      }
    mean[c] = mu;
    var[c] = sq / static_cast<T>(M);
  }
}

// ---- statistics, v2 (gridDim.y == 1) and v3's first pass (gridDim.y ==
// splits): block (c, split) runs Welford over elements split * B + t + k * splits * B.
template <typename T>
__global__ void stats_welford_blocks(const T* x, ChannelGeometry g, T* mean, T* var, T* partial_mean,
                                     T* partial_m2) {
  __shared__ SharedArray<Welford<T>[kWarpSize]> warp_partial;
  const std::int64_t B = blockDim.x, step = static_cast<std::int64_t>(gridDim.y) * B;
  for (std::int64_t c = blockIdx.x; c < g.C; c += gridDim.x) {
    Welford<T> w{0, T(0), T(0)};
    for_each_in_channel(g, c, blockIdx.y * B + threadIdx.x, step, [&](std::int64_t i) { w = add(w, x[i]); });
    w = block_reduce(w, Welford<T>{0, T(0), T(0)}, MergeWelford<T>{}, warp_partial);
    if (threadIdx.x == 0) {
      if (gridDim.y == 1) {
        write_stats(w, mean, var, c);
      } else {
        partial_mean[blockIdx.y * g.C + c] = w.mean;
        partial_m2[blockIdx.y * g.C + c] = w.m2;
      }
    }
    __syncthreads();  // warp 0 has read warp_partial before the next channel overwrites it
  }
}

// ---- statistics, v3's second pass: a warp per channel merges its `splits` partials.
template <typename T>
__global__ void stats_merge_partials(const T* partial_mean, const T* partial_m2, ChannelGeometry g,
                                     std::int64_t splits, std::int64_t block_threads, T* mean, T* var) {
  const std::int64_t M = g.N * g.S;
  const unsigned lane = lane_id();
  for (std::int64_t c = grid_thread() / kWarpSize; c < g.C; c += grid_threads() / kWarpSize) {
    Welford<T> w{0, T(0), T(0)};
    for (std::int64_t s = lane; s < splits; s += kWarpSize)
      w = MergeWelford<T>{}(w, {split_count(M, block_threads, s, splits), partial_mean[s * g.C + c],
                                partial_m2[s * g.C + c]});
    w = warp_reduce_down(w, MergeWelford<T>{});
    if (lane == 0) write_stats(w, mean, var, c);
  }
}

// ---- the map's coefficients, a thread per channel (C values: launch-bound,
// and one launch where the tensor ops it replaces took eleven).
template <typename T>
__global__ void coefficients_kernel(batch_norm_math::CoefficientScalars<T> s,
                                    batch_norm_math::CoefficientArrays<T> a, std::int64_t C) {
  for (std::int64_t c = grid_thread(); c < C; c += grid_threads()) batch_norm_math::coefficients_of_channel(s, a, c);
}

// ---- backward sums: sum(dy) and sum(dy * (x - mean)), same three mappings.
// Behind a ReLU (relu_out defined) the gradient of element i is masked by the
// ReLU's output and written to grad_masked in the same pass; grad_masked may
// be dy itself, as element i is read and then written by one thread only.
template <typename T>
struct GradientBehindRelu {
  const T* relu_out;  // null: no ReLU, dy as it is
  T* grad_masked;
  __device__ __forceinline__ T operator()(const T* dy, std::int64_t i) const {
    const T d = dy[i];  // loaded by every lane: a masked load would fetch the same sectors
    if (relu_out == nullptr) return d;
    const T g = relu_out[i] > T(0) ? d : T(0);
    grad_masked[i] = g;
    return g;
  }
};

template <typename T>
__global__ void backward_reduce_v1_thread_per_channel(const T* dy, const T* x, const T* mean, ChannelGeometry g,
                                                      GradientBehindRelu<T> grad, T* sum_dy, T* sum_dy_xmu) {
  for (std::int64_t c = grid_thread(); c < g.C; c += grid_threads()) {
    const T mu = mean[c];
    T a = 0, b = 0;
    for (std::int64_t n = 0; n < g.N; ++n)
      for (std::int64_t s = 0; s < g.S; ++s) {
        const std::int64_t i = (n * g.C + c) * g.S + s;
        const T gi = grad(dy, i);
        a += gi;
        b += gi * (x[i] - mu);
      }
    sum_dy[c] = a;
    sum_dy_xmu[c] = b;
  }
}

// Block (c, split); with gridDim.y > 1 the outputs are [splits, C] partials.
template <typename T>
__global__ void backward_reduce_blocks(const T* dy, const T* x, const T* mean, ChannelGeometry g,
                                       GradientBehindRelu<T> grad, T* sum_dy, T* sum_dy_xmu) {
  __shared__ SharedArray<T[2][kWarpSize]> warp_partial;
  const std::int64_t B = blockDim.x, step = static_cast<std::int64_t>(gridDim.y) * B;
  for (std::int64_t c = blockIdx.x; c < g.C; c += gridDim.x) {
    const T mu = mean[c];
    T a = 0, b = 0;
    for_each_in_channel(g, c, blockIdx.y * B + threadIdx.x, step, [&](std::int64_t i) {
      const T gi = grad(dy, i);
      a += gi;
      b += gi * (x[i] - mu);
    });
    a = block_reduce(a, T(0), Add{}, warp_partial[0]);
    b = block_reduce(b, T(0), Add{}, warp_partial[1]);
    if (threadIdx.x == 0) {
      sum_dy[blockIdx.y * g.C + c] = a;
      sum_dy_xmu[blockIdx.y * g.C + c] = b;
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void backward_reduce_merge_partials(const T* partial_dy, const T* partial_dy_xmu, ChannelGeometry g,
                                               std::int64_t splits, T* sum_dy, T* sum_dy_xmu) {
  const unsigned lane = lane_id();
  for (std::int64_t c = grid_thread() / kWarpSize; c < g.C; c += grid_threads() / kWarpSize) {
    T a = 0, b = 0;
    for (std::int64_t s = lane; s < splits; s += kWarpSize) {
      a += partial_dy[s * g.C + c];
      b += partial_dy_xmu[s * g.C + c];
    }
    a = warp_reduce_down(a, Add{});
    b = warp_reduce_down(b, Add{});
    if (lane == 0) {
      sum_dy[c] = a;
      sum_dy_xmu[c] = b;
    }
  }
}

// ---- elementwise maps. The element rules, shared by both mappings below
// so that they agree bit for bit: the input gradient's products are rounded
// before their sums (batch_norm_math::rounded_product), so nvcc cannot fuse
// them differently where one mapping hoists a channel's terms out of its
// loop and the other does not. residual (absent: none) is added before the
// ReLU, to the rounded affine value, as the unfused add would.
template <typename T>
__device__ __forceinline__ T affine_element(T x, T scale, T shift, bool has_residual, T residual, bool relu) {
  T y = x * scale + shift;
  if (has_residual) y += residual;
  return relu && !(y > T(0)) ? T(0) : y;
}

// Channel c's terms of grad_in = weight * invstd * (dy - sum_dy / M - (x - mean) * invstd^2 * sum_dy_xmu / M).
template <typename T>
struct InputGradientChannel {
  T scale;    // weight * invstd
  T mean_dy;  // sum_dy / M
  T mean;
  T proj;  // coefficient of (x - mean): sum_dy_xmu / M * invstd^2
};

template <typename T>
__device__ __forceinline__ InputGradientChannel<T> input_gradient_channel(const T* mean, const T* invstd,
                                                                          const T* weight, const T* sum_dy,
                                                                          const T* sum_dy_xmu, T inv_m,
                                                                          std::int64_t c) {
  using batch_norm_math::rounded_product;
  const T istd = invstd[c];
  return {rounded_product(weight[c], istd), rounded_product(sum_dy[c], inv_m), mean[c],
          rounded_product(rounded_product(rounded_product(sum_dy_xmu[c], inv_m), istd), istd)};
}

template <typename T>
__device__ __forceinline__ T input_gradient_element(const InputGradientChannel<T>& k, T dy, T x) {
  using batch_norm_math::rounded_product;
  return rounded_product(k.scale, dy - k.mean_dy - rounded_product(x - k.mean, k.proj));
}

// v1 to v3: one element per grid-stride step, its channel (i / S) % C (two
// 64-bit divisions, some 40-100 instructions, per element of a map whose
// floor is 12 bytes of memory traffic).
template <typename T>
__global__ void affine_kernel(const T* x, const T* scale, const T* shift, const T* residual, ChannelGeometry g,
                              bool relu, T* out) {
  const std::int64_t total = g.N * g.C * g.S;
  for (std::int64_t i = grid_thread(); i < total; i += grid_threads()) {
    const std::int64_t c = (i / g.S) % g.C;
    out[i] = affine_element(x[i], scale[c], shift[c], residual != nullptr, residual != nullptr ? residual[i] : T(0),
                            relu);
  }
}

template <typename T>
__global__ void backward_input_kernel(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight,
                                      const T* sum_dy, const T* sum_dy_xmu, ChannelGeometry g, T* grad_in) {
  const std::int64_t total = g.N * g.C * g.S;
  const T inv_m = T(1) / static_cast<T>(g.N * g.S);
  for (std::int64_t i = grid_thread(); i < total; i += grid_threads()) {
    const std::int64_t c = (i / g.S) % g.C;
    grad_in[i] = input_gradient_element(input_gradient_channel(mean, invstd, weight, sum_dy, sum_dy_xmu, inv_m, c),
                                        dy[i], x[i]);
  }
}

// v4: 16 bytes per grid-stride step (4 floats or 2 doubles, one load or
// store instruction per array), planes of S elements a multiple of that, so
// a vector lies in one plane and its channel is worked out once, in 32-bit
// arithmetic: (v / vectors_per_plane) % C, two divisions per vector.
// Needs 16-byte aligned arrays and fewer than 2^31 vectors (the launcher
// checks, and runs the kernels above otherwise).
struct VectorGeometry {
  unsigned vectors, vectors_per_plane, C;
};

template <typename T>
__global__ void affine_vectors(const T* x, const T* scale, const T* shift, const T* residual, VectorGeometry g,
                               bool relu, T* out) {
  constexpr int kV = dev::kVec16<T>;
  const unsigned step = gridDim.x * blockDim.x;
  for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < g.vectors; v += step) {
    const unsigned c = v / g.vectors_per_plane % g.C;
    const std::size_t at = static_cast<std::size_t>(v) * kV;
    T xs[kV], rs[kV] = {}, ys[kV];
    dev::load16(x + at, xs);
    if (residual != nullptr) dev::load16(residual + at, rs);
    const T k = scale[c], d = shift[c];
    CK_UNROLL for (int j = 0; j < kV; ++j) ys[j] = affine_element(xs[j], k, d, residual != nullptr, rs[j], relu);
    dev::store16(out + at, ys);
  }
}

template <typename T>
__global__ void backward_input_vectors(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight,
                                       const T* sum_dy, const T* sum_dy_xmu, T inv_m, VectorGeometry g,
                                       T* grad_in) {
  constexpr int kV = dev::kVec16<T>;
  const unsigned step = gridDim.x * blockDim.x;
  for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < g.vectors; v += step) {
    const unsigned c = v / g.vectors_per_plane % g.C;
    const std::size_t at = static_cast<std::size_t>(v) * kV;
    T dys[kV], xs[kV], gs[kV];
    dev::load16(dy + at, dys);
    dev::load16(x + at, xs);
    const InputGradientChannel<T> k = input_gradient_channel(mean, invstd, weight, sum_dy, sum_dy_xmu, inv_m, c);
    CK_UNROLL for (int j = 0; j < kV; ++j) gs[j] = input_gradient_element(k, dys[j], xs[j]);
    dev::store16(grad_in + at, gs);
  }
}

// Whether v4's vector maps can run [N, C, S] with these arrays (null ones
// count as aligned), and their geometry.
template <typename T>
bool vector_geometry(std::int64_t N, std::int64_t C, std::int64_t S, std::initializer_list<const void*> arrays,
                     VectorGeometry* g) {
  constexpr std::int64_t kV = dev::kVec16<T>;
  const std::int64_t vectors = N * C * S / kV;
  if (S % kV != 0 || vectors <= 0 || vectors >= (std::int64_t{1} << 31)) return false;
  for (const void* p : arrays)
    if (!dev::aligned16(p)) return false;
  *g = {static_cast<unsigned>(vectors), static_cast<unsigned>(S / kV), static_cast<unsigned>(C)};
  return true;
}

unsigned channel_blocks(std::int64_t C) { return static_cast<unsigned>(C < kMaxGridX ? C : kMaxGridX); }

unsigned warp_blocks(std::int64_t warps) {
  const std::int64_t per_block = kBlockThreads / kWarpSize, b = (warps + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxGridX ? kMaxGridX : b));
}

}  // namespace

const char* mapping_name(BatchNormMapping m) {
  switch (m) {
    case BatchNormMapping::thread_per_channel: return "thread_per_channel";
    case BatchNormMapping::block_per_channel: return "block_per_channel";
    case BatchNormMapping::split_channels: return "split_channels";
  }
  return "?";
}

int batch_norm_kernel_version() {
  static const bool registered = [] {
    register_kernel_family({"batch_norm", 4, 4,
                            "v1 one thread per channel, two passes; "
                            "v2 one block per channel, Welford states merged by warp shuffles; "
                            "v3 channels split over several blocks when C alone cannot fill the GPU; "
                            "v4 v3's reductions, the elementwise maps 16 bytes at a time with the channel found "
                            "once per vector"});
    return true;
  }();
  (void)registered;
  return kernel_version("batch_norm");
}

BatchNormPlan plan_batch_norm(std::int64_t N, std::int64_t C, std::int64_t S, int version) {
  CK_CHECK(version >= 1 && version <= 4, "batch_norm: kernel version ", version, " does not exist (1..4)");
  BatchNormPlan p;
  p.version = version;
  if (version == 1) return p;
  p.mapping = BatchNormMapping::block_per_channel;
  if (version == 2 || C <= 0 || C >= kTargetBlocks) return p;  // v4's reductions are v3's
  const std::int64_t for_occupancy = (kTargetBlocks + C - 1) / C;
  const std::int64_t for_work = N * S / (kBlockThreads * kPerThreadMin);
  std::int64_t splits = for_occupancy < for_work ? for_occupancy : for_work;
  if (splits > kMaxGridX) splits = kMaxGridX;
  if (splits > 1) {
    p.mapping = BatchNormMapping::split_channels;
    p.splits = static_cast<unsigned>(splits);
    p.workspace_elements = 2 * splits * C;
  }
  return p;
}

void launch_batch_norm_stats(DType dtype, const void* x, std::int64_t N, std::int64_t C, std::int64_t S, void* mean,
                             void* var, const BatchNormPlan& p, void* workspace) {
  if (C == 0) return;
  CK_CHECK(p.splits == 1 || workspace != nullptr, "batch_norm_stats: a split plan needs a workspace of ",
           p.workspace_elements, " elements");
  const ChannelGeometry g{N, C, S};
  dispatch_floating(dtype, "batch_norm_stats", [&](auto t) {
    using T = decltype(t);
    const T* xp = static_cast<const T*>(x);
    T* mp = static_cast<T*>(mean);
    T* vp = static_cast<T*>(var);
    switch (p.mapping) {
      case BatchNormMapping::thread_per_channel: {
        const LaunchShape s = grid_stride_shape(C);
        launch(stats_v1_thread_per_channel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, xp, g, mp, vp);
        return;
      }
      case BatchNormMapping::block_per_channel:
        launch(stats_welford_blocks<T>, dim3(channel_blocks(C)), dim3(kBlockThreads), 0, nullptr, xp, g, mp, vp,
               static_cast<T*>(nullptr), static_cast<T*>(nullptr));
        return;
      case BatchNormMapping::split_channels: {
        T* partial_mean = static_cast<T*>(workspace);
        T* partial_m2 = partial_mean + p.splits * C;
        launch(stats_welford_blocks<T>, dim3(channel_blocks(C), p.splits), dim3(kBlockThreads), 0, nullptr, xp, g, mp,
               vp, partial_mean, partial_m2);
        launch(stats_merge_partials<T>, dim3(warp_blocks(C)), dim3(kBlockThreads), 0, nullptr,
               static_cast<const T*>(partial_mean), static_cast<const T*>(partial_m2), g,
               static_cast<std::int64_t>(p.splits), static_cast<std::int64_t>(kBlockThreads), mp, vp);
        return;
      }
    }
  });
}

void launch_batch_norm_coefficients(DType dtype, std::int64_t C, const void* mean, const void* var,
                                    const void* weight, const void* bias, void* running_mean, void* running_var,
                                    BatchNormCoefficientStep step, void* invstd, void* scale, void* shift) {
  if (C == 0) return;
  CK_CHECK((running_mean == nullptr) == (running_var == nullptr),
           "batch_norm_coefficients: running_mean and running_var must both be given or both be null");
  const LaunchShape shape = grid_stride_shape(C);
  dispatch_floating(dtype, "batch_norm_coefficients", [&](auto t) {
    using T = decltype(t);
    const batch_norm_math::CoefficientArrays<T> a{
        static_cast<const T*>(mean),   static_cast<const T*>(var),  static_cast<const T*>(weight),
        static_cast<const T*>(bias),   static_cast<T*>(running_mean), static_cast<T*>(running_var),
        static_cast<T*>(invstd),       static_cast<T*>(scale),      static_cast<T*>(shift)};
    launch(coefficients_kernel<T>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr,
           batch_norm_math::coefficient_scalars<T>(step), a, C);
  });
}

namespace {

// The backward reduction of both launchers; relu_out null: no ReLU in front.
void backward_reduce(const char* op, DType dtype, const void* grad_out, const void* relu_out, const void* x,
                     const void* mean, std::int64_t N, std::int64_t C, std::int64_t S, void* grad_masked,
                     void* sum_dy, void* sum_dy_xmu, const BatchNormPlan& p, void* workspace) {
  if (C == 0) return;
  CK_CHECK(p.splits == 1 || workspace != nullptr, op, ": a split plan needs a workspace of ", p.workspace_elements,
           " elements");
  const ChannelGeometry g{N, C, S};
  dispatch_floating(dtype, op, [&](auto t) {
    using T = decltype(t);
    const T* dy = static_cast<const T*>(grad_out);
    const T* xp = static_cast<const T*>(x);
    const T* mp = static_cast<const T*>(mean);
    const GradientBehindRelu<T> grad{static_cast<const T*>(relu_out), static_cast<T*>(grad_masked)};
    T* s1 = static_cast<T*>(sum_dy);
    T* s2 = static_cast<T*>(sum_dy_xmu);
    switch (p.mapping) {
      case BatchNormMapping::thread_per_channel: {
        const LaunchShape s = grid_stride_shape(C);
        launch(backward_reduce_v1_thread_per_channel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, dy, xp, mp, g,
               grad, s1, s2);
        return;
      }
      case BatchNormMapping::block_per_channel:
        launch(backward_reduce_blocks<T>, dim3(channel_blocks(C)), dim3(kBlockThreads), 0, nullptr, dy, xp, mp, g,
               grad, s1, s2);
        return;
      case BatchNormMapping::split_channels: {
        T* partial_dy = static_cast<T*>(workspace);
        T* partial_dy_xmu = partial_dy + p.splits * C;
        launch(backward_reduce_blocks<T>, dim3(channel_blocks(C), p.splits), dim3(kBlockThreads), 0, nullptr, dy, xp,
               mp, g, grad, partial_dy, partial_dy_xmu);
        launch(backward_reduce_merge_partials<T>, dim3(warp_blocks(C)), dim3(kBlockThreads), 0, nullptr,
               static_cast<const T*>(partial_dy), static_cast<const T*>(partial_dy_xmu), g,
               static_cast<std::int64_t>(p.splits), s1, s2);
        return;
      }
    }
  });
}

void affine(const char* op, DType dtype, const void* x, const void* residual, const void* scale, const void* shift,
            std::int64_t N, std::int64_t C, std::int64_t S, bool relu, void* out, int version) {
  const std::int64_t total = N * C * S;
  if (total == 0) return;
  dispatch_floating(dtype, op, [&](auto t) {
    using T = decltype(t);
    const T* xp = static_cast<const T*>(x);
    const T* rp = static_cast<const T*>(residual);
    VectorGeometry vg{};
    if (version >= 4 && vector_geometry<T>(N, C, S, {x, residual, out}, &vg)) {
      const LaunchShape s = grid_stride_shape(vg.vectors);
      launch(affine_vectors<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, xp, static_cast<const T*>(scale),
             static_cast<const T*>(shift), rp, vg, relu, static_cast<T*>(out));
      return;
    }
    const LaunchShape s = grid_stride_shape(total);
    launch(affine_kernel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, xp, static_cast<const T*>(scale),
           static_cast<const T*>(shift), rp, ChannelGeometry{N, C, S}, relu, static_cast<T*>(out));
  });
}

}  // namespace

void launch_batch_norm_backward_reduce(DType dtype, const void* grad_out, const void* x, const void* mean,
                                       std::int64_t N, std::int64_t C, std::int64_t S, void* sum_dy,
                                       void* sum_dy_xmu, const BatchNormPlan& p, void* workspace) {
  backward_reduce("batch_norm_backward_reduce", dtype, grad_out, nullptr, x, mean, N, C, S, nullptr, sum_dy,
                  sum_dy_xmu, p, workspace);
}

void launch_batch_norm_relu_backward_reduce(DType dtype, const void* grad_out, const void* out, const void* x,
                                            const void* mean, std::int64_t N, std::int64_t C, std::int64_t S,
                                            void* grad_masked, void* sum_dy, void* sum_dy_xmu,
                                            const BatchNormPlan& p, void* workspace) {
  CK_CHECK(out != nullptr && grad_masked != nullptr,
           "batch_norm_relu_backward_reduce: needs the ReLU's output and a grad_masked array");
  backward_reduce("batch_norm_relu_backward_reduce", dtype, grad_out, out, x, mean, N, C, S, grad_masked, sum_dy,
                  sum_dy_xmu, p, workspace);
}

void launch_batch_norm_affine(DType dtype, const void* x, const void* scale, const void* shift, std::int64_t N,
                              std::int64_t C, std::int64_t S, bool relu, void* out, int version) {
  affine("batch_norm_affine", dtype, x, nullptr, scale, shift, N, C, S, relu, out, version);
}

void launch_batch_norm_add_relu(DType dtype, const void* x, const void* residual, const void* scale,
                                const void* shift, std::int64_t N, std::int64_t C, std::int64_t S, void* out,
                                int version) {
  CK_CHECK(residual != nullptr, "batch_norm_add_relu: the residual is missing");
  affine("batch_norm_add_relu", dtype, x, residual, scale, shift, N, C, S, /*relu=*/true, out, version);
}

void launch_batch_norm_backward_input(DType dtype, const void* grad_out, const void* x, const void* mean,
                                      const void* invstd, const void* weight, const void* sum_dy,
                                      const void* sum_dy_xmu, std::int64_t N, std::int64_t C, std::int64_t S,
                                      void* grad_in, int version) {
  const std::int64_t total = N * C * S;
  if (total == 0) return;
  dispatch_floating(dtype, "batch_norm_backward_input", [&](auto t) {
    using T = decltype(t);
    const T* dy = static_cast<const T*>(grad_out);
    const T* xp = static_cast<const T*>(x);
    const T* mp = static_cast<const T*>(mean);
    const T* ip = static_cast<const T*>(invstd);
    const T* wp = static_cast<const T*>(weight);
    const T* s1 = static_cast<const T*>(sum_dy);
    const T* s2 = static_cast<const T*>(sum_dy_xmu);
    VectorGeometry vg{};
    if (version >= 4 && vector_geometry<T>(N, C, S, {grad_out, x, grad_in}, &vg)) {
      const LaunchShape s = grid_stride_shape(vg.vectors);
      launch(backward_input_vectors<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, dy, xp, mp, ip, wp, s1, s2,
             T(1) / static_cast<T>(N * S), vg, static_cast<T*>(grad_in));
      return;
    }
    const LaunchShape s = grid_stride_shape(total);
    launch(backward_input_kernel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, dy, xp, mp, ip, wp, s1, s2,
           ChannelGeometry{N, C, S}, static_cast<T*>(grad_in));
  });
}

}  // namespace convkit::CK_GPU_NS
