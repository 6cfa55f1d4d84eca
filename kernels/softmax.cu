// Softmax, log-softmax and fused cross-entropy, along rows of n elements.
//
// x is viewed as [outer, n, inner]: row (o, j) is x[o, :, j], n elements
// `inner` apart. Floor: softmax reads x and writes y, 2 * rows * n * sizeof(T)
// bytes, with one exp per element (softmax) and a handful of flops; the
// backward reads g and y and writes grad_in (3 passes of memory); cross-entropy
// reads the logits once and writes two numbers per row. All are memory-bound.
//
//   v1 thread_per_row  a thread walks its row three times (max, sum of exp,
//                      write). Obviously right. When inner > 1 neighbouring
//                      threads own neighbouring j, so loads coalesce; when
//                      inner == 1 (the common case: the last dim) each thread
//                      strides through its own row and nothing coalesces.
//   v2 warp_rows / block_rows (inner == 1)
//                      a warp (n <= 1024) or a block (longer rows) per row:
//                      lanes read neighbouring elements, and the maximum and
//                      the sum are found in ONE pass by the online rule (keep
//                      (max, sum of exp(x - max)), rescale the sum when the
//                      max grows), merged across lanes by __shfl_xor_sync, so
//                      every lane ends with the row's values. Two passes over
//                      x instead of three.
//      columns (inner > 1, forward)
//                      v1's coalesced mapping with the online pass.
//
// Sums accumulate in T (float32 rows of 10^4 classes lose about 1e-6
// relative); cross-entropy forms lse and the loss in double once per row.
#include "kernels/softmax.cuh"

#include <type_traits>

#include "convkit/backend/kernel_versions.h"
#include "kernels/device_math.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/tensor_view.cuh"
#include "kernels/warp_reduce.cuh"

namespace convkit::CK_GPU_NS {

namespace {

constexpr std::int64_t kWarpRowMax = 1024;  // longest row given to one warp (32 elements a lane)
constexpr unsigned kBlockThreads = 256;
constexpr unsigned kWarpsPerBlock = kBlockThreads / kWarpSize;
constexpr unsigned kMaxBlocks = 65535;

// exp(a - m), with exp(0) = 1 also when a and m are the same infinity, so that
// rescaling a running sum never turns -inf - -inf into NaN. (A row that is
// all -inf still comes out NaN, as on the cpu: its elements are x - max = NaN.)
template <typename T>
__device__ __forceinline__ T exp_from(T a, T m) {
  return a == m ? T(1) : dev::exp(a - m);
}

// Online softmax normaliser: the maximum so far and the sum of exp(x - max).
template <typename T>
struct MaxSum {
  T max;
  T sum;
};

template <typename T>
__device__ __forceinline__ MaxSum<T> max_sum_identity() {
  return {static_cast<T>(-INFINITY), T(0)};
}

template <typename T>
__device__ __forceinline__ MaxSum<T> add(MaxSum<T> s, T v) {
  if (v > s.max) return {v, s.sum * exp_from(s.max, v) + T(1)};
  return {s.max, s.sum + exp_from(v, s.max)};
}

template <typename T>
struct MergeMaxSum {
  __device__ __forceinline__ MaxSum<T> operator()(MaxSum<T> a, MaxSum<T> b) const {
    const T m = b.max > a.max ? b.max : a.max;
    return {m, a.sum * exp_from(a.max, m) + b.sum * exp_from(b.max, m)};
  }
};

template <typename T>
__device__ __forceinline__ MaxSum<T> shfl_xor(MaxSum<T> s, int mask) {
  return {CK_GPU_NS::shfl_xor(s.max, mask), CK_GPU_NS::shfl_xor(s.sum, mask)};
}

struct Add {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};

// Output element from x, the row's max and sum (online or not).
template <typename T>
__device__ __forceinline__ T softmax_value(T x, T max, T sum, bool log) {
  return log ? (x - max) - dev::log(sum) : dev::exp(x - max) / sum;
}

// ---- v1: one thread per row, three passes.
template <typename T>
__global__ void softmax_v1_thread_per_row(const T* x, T* y, std::int64_t rows, std::int64_t n, std::int64_t inner,
                                          bool log) {
  for (std::int64_t row = grid_thread(); row < rows; row += grid_threads()) {
    const std::int64_t base = (row / inner) * n * inner + row % inner;
    T max = static_cast<T>(-INFINITY);
    for (std::int64_t k = 0; k < n; ++k) {
      const T v = x[base + k * inner];
      max = v > max ? v : max;
    }
    T sum = 0;
    for (std::int64_t k = 0; k < n; ++k) sum += dev::exp(x[base + k * inner] - max);
    for (std::int64_t k = 0; k < n; ++k) y[base + k * inner] = softmax_value(x[base + k * inner], max, sum, log);
  }
}

// ---- v2, inner > 1: v1's mapping (neighbouring threads, neighbouring j) with
// the online pass, so x is read twice instead of three times.
template <typename T>
__global__ void softmax_v2_columns(const T* x, T* y, std::int64_t rows, std::int64_t n, std::int64_t inner, bool log) {
  for (std::int64_t row = grid_thread(); row < rows; row += grid_threads()) {
    const std::int64_t base = (row / inner) * n * inner + row % inner;
    MaxSum<T> s = max_sum_identity<T>();
    for (std::int64_t k = 0; k < n; ++k) s = add(s, x[base + k * inner]);
    for (std::int64_t k = 0; k < n; ++k) y[base + k * inner] = softmax_value(x[base + k * inner], s.max, s.sum, log);
  }
}

// ---- v2, inner == 1 and n <= 1024: one warp per contiguous row, 8 per block.
template <typename T>
__global__ void softmax_v2_warp_rows(const T* x, T* y, std::int64_t rows, std::int64_t n, bool log) {
  const unsigned lane = lane_id();
  // `row` is the same for the whole warp, so every lane reaches every shuffle.
  for (std::int64_t row = grid_thread() / kWarpSize; row < rows; row += grid_threads() / kWarpSize) {
    const T* xr = x + row * n;
    MaxSum<T> s = max_sum_identity<T>();
    for (std::int64_t k = lane; k < n; k += kWarpSize) s = add(s, xr[k]);
    s = warp_reduce_all(s, MergeMaxSum<T>{});
    T* yr = y + row * n;
    for (std::int64_t k = lane; k < n; k += kWarpSize) yr[k] = softmax_value(xr[k], s.max, s.sum, log);
  }
}

// The block's (max, sum) from each thread's: shuffles within warps, then every
// thread merges the warp results in the same order, so all hold the same value.
// T is deduced from the value alone: warp_partial is a SharedArray, which
// converts to a pointer but cannot be deduced from.
template <typename T>
__device__ __forceinline__ MaxSum<T> block_max_sum(MaxSum<T> s, std::type_identity_t<MaxSum<T>>* warp_partial) {
  s = warp_reduce_all(s, MergeMaxSum<T>{});
  if (lane_id() == 0) warp_partial[threadIdx.x / kWarpSize] = s;
  __syncthreads();
  s = warp_partial[0];
  for (unsigned w = 1; w < blockDim.x / kWarpSize; ++w) s = MergeMaxSum<T>{}(s, warp_partial[w]);
  return s;
}

template <typename T>
__device__ __forceinline__ T block_sum(T v, std::type_identity_t<T>* warp_partial) {
  v = warp_reduce_all(v, Add{});
  if (lane_id() == 0) warp_partial[threadIdx.x / kWarpSize] = v;
  __syncthreads();
  v = warp_partial[0];
  for (unsigned w = 1; w < blockDim.x / kWarpSize; ++w) v += warp_partial[w];
  return v;
}

// ---- v2, inner == 1 and n > 1024: one block per row.
template <typename T>
__global__ void softmax_v2_block_rows(const T* x, T* y, std::int64_t rows, std::int64_t n, bool log) {
  __shared__ SharedArray<MaxSum<T>[kWarpsPerBlock]> warp_partial;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    MaxSum<T> s = max_sum_identity<T>();
    for (std::int64_t k = threadIdx.x; k < n; k += blockDim.x) s = add(s, xr[k]);
    s = block_max_sum(s, warp_partial);
    T* yr = y + row * n;
    for (std::int64_t k = threadIdx.x; k < n; k += blockDim.x) yr[k] = softmax_value(xr[k], s.max, s.sum, log);
    __syncthreads();  // everyone has read warp_partial before the next row overwrites it
  }
}

// ---- backward. dot = sum(g * y) (softmax) or sum(g) (log-softmax).
template <typename T>
__device__ __forceinline__ T backward_term(T g, T y, bool log) {
  return log ? g : g * y;
}
template <typename T>
__device__ __forceinline__ T backward_value(T g, T y, T dot, bool log) {
  return log ? g - dev::exp(y) * dot : y * (g - dot);
}

// v1 (and v2 when inner > 1, where this mapping already coalesces): two passes per thread.
template <typename T>
__global__ void softmax_backward_v1_thread_per_row(const T* g, const T* y, T* gi, std::int64_t rows, std::int64_t n,
                                                   std::int64_t inner, bool log) {
  for (std::int64_t row = grid_thread(); row < rows; row += grid_threads()) {
    const std::int64_t base = (row / inner) * n * inner + row % inner;
    T dot = 0;
    for (std::int64_t k = 0; k < n; ++k) dot += backward_term(g[base + k * inner], y[base + k * inner], log);
    for (std::int64_t k = 0; k < n; ++k)
      gi[base + k * inner] = backward_value(g[base + k * inner], y[base + k * inner], dot, log);
  }
}

template <typename T>
__global__ void softmax_backward_v2_warp_rows(const T* g, const T* y, T* gi, std::int64_t rows, std::int64_t n,
                                              bool log) {
  const unsigned lane = lane_id();
  for (std::int64_t row = grid_thread() / kWarpSize; row < rows; row += grid_threads() / kWarpSize) {
    const T* gr = g + row * n;
    const T* yr = y + row * n;
    T dot = 0;
    for (std::int64_t k = lane; k < n; k += kWarpSize) dot += backward_term(gr[k], yr[k], log);
    dot = warp_reduce_all(dot, Add{});
    T* out = gi + row * n;
    for (std::int64_t k = lane; k < n; k += kWarpSize) out[k] = backward_value(gr[k], yr[k], dot, log);
  }
}

template <typename T>
__global__ void softmax_backward_v2_block_rows(const T* g, const T* y, T* gi, std::int64_t rows, std::int64_t n,
                                               bool log) {
  __shared__ SharedArray<T[kWarpsPerBlock]> warp_partial;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* gr = g + row * n;
    const T* yr = y + row * n;
    T dot = 0;
    for (std::int64_t k = threadIdx.x; k < n; k += blockDim.x) dot += backward_term(gr[k], yr[k], log);
    dot = block_sum(dot, warp_partial);
    T* out = gi + row * n;
    for (std::int64_t k = threadIdx.x; k < n; k += blockDim.x) out[k] = backward_value(gr[k], yr[k], dot, log);
    __syncthreads();
  }
}

// ---- cross-entropy forward. Per row: (max, sum of exp) and the plain sum of
// the logits; lse = max + log(sum) and the loss in double.
struct SmoothedTarget {
  double on_target;  // 1 - s
  double uniform;    // s / C
};

template <typename T>
__device__ __forceinline__ void write_cross_entropy(MaxSum<T> s, T sum_x, T x_target, SmoothedTarget q, T* loss,
                                                    T* lse, std::int64_t row) {
  const double log_sum_exp = static_cast<double>(s.max) + dev::log(static_cast<double>(s.sum));
  lse[row] = static_cast<T>(log_sum_exp);
  loss[row] = static_cast<T>(log_sum_exp - q.on_target * static_cast<double>(x_target) -
                             q.uniform * static_cast<double>(sum_x));
}

// x[row, target], or NaN for a target outside [0, C), which is recorded in
// `bad` (kernels/target_check.cuh) rather than read out of bounds.
template <typename T>
__device__ __forceinline__ T target_logit(const T* xr, const std::int64_t* targets, std::int64_t row,
                                          std::int64_t C, BadTargetRecord* bad) {
  const std::int64_t t = targets[row];
  return check_target(bad, kCrossEntropy, row, t, C) ? xr[t] : static_cast<T>(NAN);
}

template <typename T>
__global__ void cross_entropy_v1_thread_per_row(const T* x, const std::int64_t* targets, std::int64_t N,
                                                std::int64_t C, SmoothedTarget q, T* loss, T* lse,
                                                BadTargetRecord* bad) {
  for (std::int64_t row = grid_thread(); row < N; row += grid_threads()) {
    const T* xr = x + row * C;
    T max = static_cast<T>(-INFINITY);
    for (std::int64_t c = 0; c < C; ++c) max = xr[c] > max ? xr[c] : max;
    T sum = 0, sum_x = 0;
    for (std::int64_t c = 0; c < C; ++c) {
      sum += dev::exp(xr[c] - max);
      sum_x += xr[c];
    }
    write_cross_entropy(MaxSum<T>{max, sum}, sum_x, target_logit(xr, targets, row, C, bad), q, loss, lse, row);
  }
}

template <typename T>
__global__ void cross_entropy_v2_warp_rows(const T* x, const std::int64_t* targets, std::int64_t N, std::int64_t C,
                                           SmoothedTarget q, T* loss, T* lse, BadTargetRecord* bad) {
  const unsigned lane = lane_id();
  for (std::int64_t row = grid_thread() / kWarpSize; row < N; row += grid_threads() / kWarpSize) {
    const T* xr = x + row * C;
    MaxSum<T> s = max_sum_identity<T>();
    T sum_x = 0;
    for (std::int64_t c = lane; c < C; c += kWarpSize) {
      s = add(s, xr[c]);
      sum_x += xr[c];
    }
    s = warp_reduce_all(s, MergeMaxSum<T>{});
    sum_x = warp_reduce_all(sum_x, Add{});
    if (lane == 0) write_cross_entropy(s, sum_x, target_logit(xr, targets, row, C, bad), q, loss, lse, row);
  }
}

template <typename T>
__global__ void cross_entropy_v2_block_rows(const T* x, const std::int64_t* targets, std::int64_t N, std::int64_t C,
                                            SmoothedTarget q, T* loss, T* lse, BadTargetRecord* bad) {
  __shared__ SharedArray<MaxSum<T>[kWarpsPerBlock]> warp_max_sum;
  __shared__ SharedArray<T[kWarpsPerBlock]> warp_sum_x;
  for (std::int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const T* xr = x + row * C;
    MaxSum<T> s = max_sum_identity<T>();
    T sum_x = 0;
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) {
      s = add(s, xr[c]);
      sum_x += xr[c];
    }
    s = block_max_sum(s, warp_max_sum);
    sum_x = block_sum(sum_x, warp_sum_x);
    if (threadIdx.x == 0) write_cross_entropy(s, sum_x, target_logit(xr, targets, row, C, bad), q, loss, lse, row);
    __syncthreads();
  }
}

// grad[n, c] = g[n] * (exp(x - lse[n]) - s / C) - g[n] * (1 - s) [c == target]:
// elementwise, one grid-stride loop; reads x, writes grad (plus three numbers per row).
template <typename T>
__global__ void cross_entropy_backward_kernel(const T* x, const std::int64_t* targets, const T* lse, const T* grad_loss,
                                              std::int64_t N, std::int64_t C, T on_target, T uniform, T* grad) {
  for (std::int64_t i = grid_thread(); i < N * C; i += grid_threads()) {
    const std::int64_t row = i / C, c = i % C;
    const T g = grad_loss[row];
    T v = g * (dev::exp(x[i] - lse[row]) - uniform);
    if (c == targets[row]) v -= g * on_target;
    grad[i] = v;
  }
}

unsigned blocks_for(std::int64_t units_per_block, std::int64_t units) {
  const std::int64_t b = (units + units_per_block - 1) / units_per_block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

void check_version(int version) {
  CK_CHECK(version == 1 || version == 2, "softmax: kernel version ", version, " does not exist (1..2)");
}

}  // namespace

const char* mapping_name(SoftmaxMapping m) {
  switch (m) {
    case SoftmaxMapping::thread_per_row: return "thread_per_row";
    case SoftmaxMapping::warp_rows: return "warp_rows";
    case SoftmaxMapping::block_rows: return "block_rows";
    case SoftmaxMapping::columns: return "columns";
  }
  return "?";
}

int softmax_kernel_version() {
  static const bool registered = [] {
    register_kernel_family({"softmax", 2, 2,
                            "v1 one thread per row, three passes; "
                            "v2 a warp (or block) per contiguous row with an online max+sum merged by shuffles, "
                            "coalesced thread-per-row for rows across inner dims"});
    return true;
  }();
  (void)registered;
  return kernel_version("softmax");
}

SoftmaxMapping softmax_forward_mapping(std::int64_t n, std::int64_t inner, int version) {
  check_version(version);
  if (version == 1) return SoftmaxMapping::thread_per_row;
  if (inner > 1) return SoftmaxMapping::columns;
  return n <= kWarpRowMax ? SoftmaxMapping::warp_rows : SoftmaxMapping::block_rows;
}

SoftmaxMapping softmax_backward_mapping(std::int64_t n, std::int64_t inner, int version) {
  check_version(version);
  if (version == 1 || inner > 1) return SoftmaxMapping::thread_per_row;
  return n <= kWarpRowMax ? SoftmaxMapping::warp_rows : SoftmaxMapping::block_rows;
}

SoftmaxMapping cross_entropy_mapping(std::int64_t classes, int version) {
  return softmax_backward_mapping(classes, 1, version);
}

void launch_softmax_forward(DType dtype, const void* x, void* y, std::int64_t outer, std::int64_t n,
                            std::int64_t inner, bool log, int version) {
  const std::int64_t rows = outer * inner;
  if (rows == 0 || n == 0) return;
  const SoftmaxMapping m = softmax_forward_mapping(n, inner, version);
  dispatch_floating(dtype, "softmax", [&](auto t) {
    using T = decltype(t);
    const T* xp = static_cast<const T*>(x);
    T* yp = static_cast<T*>(y);
    switch (m) {
      case SoftmaxMapping::thread_per_row:
        launch(softmax_v1_thread_per_row<T>, dim3(blocks_for(kBlockThreads, rows)), dim3(kBlockThreads), 0, nullptr,
               xp, yp, rows, n, inner, log);
        return;
      case SoftmaxMapping::columns:
        launch(softmax_v2_columns<T>, dim3(blocks_for(kBlockThreads, rows)), dim3(kBlockThreads), 0, nullptr, xp, yp,
               rows, n, inner, log);
        return;
      case SoftmaxMapping::warp_rows:
        launch(softmax_v2_warp_rows<T>, dim3(blocks_for(kWarpsPerBlock, rows)), dim3(kBlockThreads), 0, nullptr, xp,
               yp, rows, n, log);
        return;
      case SoftmaxMapping::block_rows:
        launch(softmax_v2_block_rows<T>, dim3(blocks_for(1, rows)), dim3(kBlockThreads), 0, nullptr, xp, yp, rows, n,
               log);
        return;
    }
  });
}

void launch_softmax_backward(DType dtype, const void* grad_out, const void* y, void* grad_in, std::int64_t outer,
                             std::int64_t n, std::int64_t inner, bool log, int version) {
  const std::int64_t rows = outer * inner;
  if (rows == 0 || n == 0) return;
  const SoftmaxMapping m = softmax_backward_mapping(n, inner, version);
  dispatch_floating(dtype, "softmax_backward", [&](auto t) {
    using T = decltype(t);
    const T* gp = static_cast<const T*>(grad_out);
    const T* yp = static_cast<const T*>(y);
    T* out = static_cast<T*>(grad_in);
    switch (m) {
      case SoftmaxMapping::thread_per_row:
      case SoftmaxMapping::columns:
        launch(softmax_backward_v1_thread_per_row<T>, dim3(blocks_for(kBlockThreads, rows)), dim3(kBlockThreads), 0,
               nullptr, gp, yp, out, rows, n, inner, log);
        return;
      case SoftmaxMapping::warp_rows:
        launch(softmax_backward_v2_warp_rows<T>, dim3(blocks_for(kWarpsPerBlock, rows)), dim3(kBlockThreads), 0,
               nullptr, gp, yp, out, rows, n, log);
        return;
      case SoftmaxMapping::block_rows:
        launch(softmax_backward_v2_block_rows<T>, dim3(blocks_for(1, rows)), dim3(kBlockThreads), 0, nullptr, gp, yp,
               out, rows, n, log);
        return;
    }
  });
}

void launch_cross_entropy_forward(DType dtype, const void* logits, const std::int64_t* targets, std::int64_t N,
                                  std::int64_t C, double label_smoothing, void* loss, void* lse, int version,
                                  BadTargetRecord* bad) {
  if (N == 0) return;
  CK_CHECK(C > 0, "cross_entropy: ", C, " classes");
  const SmoothedTarget q{1.0 - label_smoothing, label_smoothing / static_cast<double>(C)};
  const SoftmaxMapping m = cross_entropy_mapping(C, version);
  dispatch_floating(dtype, "cross_entropy", [&](auto t) {
    using T = decltype(t);
    const T* xp = static_cast<const T*>(logits);
    T* lp = static_cast<T*>(loss);
    T* sp = static_cast<T*>(lse);
    switch (m) {
      case SoftmaxMapping::thread_per_row:
      case SoftmaxMapping::columns:
        launch(cross_entropy_v1_thread_per_row<T>, dim3(blocks_for(kBlockThreads, N)), dim3(kBlockThreads), 0,
               nullptr, xp, targets, N, C, q, lp, sp, bad);
        return;
      case SoftmaxMapping::warp_rows:
        launch(cross_entropy_v2_warp_rows<T>, dim3(blocks_for(kWarpsPerBlock, N)), dim3(kBlockThreads), 0, nullptr,
               xp, targets, N, C, q, lp, sp, bad);
        return;
      case SoftmaxMapping::block_rows:
        launch(cross_entropy_v2_block_rows<T>, dim3(blocks_for(1, N)), dim3(kBlockThreads), 0, nullptr, xp, targets,
               N, C, q, lp, sp, bad);
        return;
    }
  });
}

void launch_cross_entropy_backward(DType dtype, const void* logits, const std::int64_t* targets, const void* lse,
                                   const void* grad_loss, std::int64_t N, std::int64_t C, double label_smoothing,
                                   void* grad_logits) {
  if (N * C == 0) return;
  const LaunchShape s = grid_stride_shape(N * C);
  dispatch_floating(dtype, "cross_entropy_backward", [&](auto t) {
    using T = decltype(t);
    launch(cross_entropy_backward_kernel<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr,
           static_cast<const T*>(logits), targets, static_cast<const T*>(lse), static_cast<const T*>(grad_loss), N, C,
           static_cast<T>(1.0 - label_smoothing), static_cast<T>(label_smoothing / static_cast<double>(C)),
           static_cast<T*>(grad_logits));
  });
}

}  // namespace convkit::CK_GPU_NS
