#pragma once
// Helpers shared by the CPU convolution algorithms: argument checks, dtype
// dispatch, workspace carving, index ranges, lane scheduling and the bias
// gradient (which is the same sum for every algorithm).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include <omp.h>

#include "convkit/core/error.h"
#include "cpu/conv/conv_algorithm.h"

namespace convkit::cpu {

// A named pointer argument, for null checks that say which buffer is missing.
struct NamedBuffer {
  const void* ptr;
  const char* name;
};

// Throws Error (naming algorithm, pass and descriptor) unless `desc` is valid,
// supported by `algo`, `dtype` is float32/float64, every required buffer is
// non-null, and a workspace is given when the pass needs one.
void check_conv_call(const ConvAlgorithm& algo, const Conv2dDesc& desc, DType dtype, ConvPass pass,
                     std::initializer_list<NamedBuffer> required, const void* workspace);

// "conv2d forward (cpu, im2col_gemm)": the op name errors start with.
std::string conv_op_name(ConvAlgo algo, ConvPass pass);

// Calls fn.template operator()<T>() with T = float or double for `dtype`.
template <typename Fn>
void dispatch_floating(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::float32: fn.template operator()<float>(); return;
    case DType::float64: fn.template operator()<double>(); return;
    default: CK_FAIL("cpu conv2d: dtype ", dtype, " is not supported (float32 and float64 are)");
  }
}

// Lays out consecutive 64-byte-aligned slices of one workspace. The same code
// measures (base == nullptr) and carves, so workspace_bytes() can never
// disagree with what a pass actually touches.
class WorkspaceCarver {
 public:
  static constexpr std::size_t kAlignment = 64;
  explicit WorkspaceCarver(void* base) : base_(static_cast<unsigned char*>(base)) {}

  template <typename T>
  T* take(std::size_t count) {
    offset_ = round_up(offset_);
    T* slice = base_ != nullptr ? reinterpret_cast<T*>(aligned_base() + offset_) : nullptr;
    offset_ += count * sizeof(T);
    return slice;
  }
  // Bytes the caller must provide: the slices plus room to align the base.
  std::size_t bytes() const { return offset_ == 0 ? 0 : offset_ + kAlignment - 1; }

 private:
  static std::size_t round_up(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
  unsigned char* aligned_base() const {
    const auto addr = reinterpret_cast<std::uintptr_t>(base_);
    return base_ + (round_up(addr) - addr);
  }
  unsigned char* base_;
  std::size_t offset_ = 0;
};

// Indices i in [0, count) with 0 <= i*stride + offset < limit: the output
// positions whose input tap at `offset` falls inside the unpadded image.
struct IndexRange {
  std::int64_t begin = 0, end = 0;
};
inline IndexRange valid_range(std::int64_t count, std::int64_t stride, std::int64_t offset,
                              std::int64_t limit) {
  // Smallest i with i*stride + offset >= 0 (offset may be negative: padding).
  const std::int64_t begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // One past the largest i with i*stride + offset <= limit - 1.
  const std::int64_t last = limit - 1 - offset;
  const std::int64_t end = last < 0 ? 0 : std::min(count, last / stride + 1);
  return {std::min(begin, end), end};
}

// Passes of fewer flops run on the calling thread alone: the work (under
// ~0.1 ms on one core) does not pay for waking a team of threads, and on a
// loaded machine every barrier can cost a whole scheduler time slice.
constexpr double kMinParallelFlops = 1 << 22;
inline bool worth_parallelising(const Conv2dDesc& d) { return d.flops() >= kMinParallelFlops; }

// Runs fn(lane, slot, inner_parallel) for lane in [0, lanes). Lanes run on
// separate threads when `parallel` and there are at least as many lanes as
// threads, and slot is then the thread's number in that team (< lanes), so
// per-slot scratch can stay hot in one core's cache. Otherwise lanes run one
// after another with slot 0, and fn may parallelise inside when `parallel`
// (inner_parallel; Eigen GEMMs then also use every thread, being outside a
// parallel region).
template <typename Fn>
void run_lanes(std::int64_t lanes, bool parallel, Fn&& fn) {
  if (parallel && lanes >= omp_get_max_threads() && omp_get_max_threads() > 1) {
#pragma omp parallel
    {
      const std::int64_t slot = omp_get_thread_num();
      // Dynamic: on a shared machine a thread that loses its core for a
      // while leaves its remaining lanes to the others instead of making
      // them wait at the barrier. Which images a lane handles is fixed, so
      // results do not depend on the schedule.
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t lane = 0; lane < lanes; ++lane) fn(lane, slot, false);
    }
  } else {
    for (std::int64_t lane = 0; lane < lanes; ++lane) fn(lane, std::int64_t{0}, parallel);
  }
}

// The sum of values[0, count), accumulated in double.
template <typename T>
double sum_in_double(const T* values, std::int64_t count) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < count; ++i) sum += static_cast<double>(values[i]);
  return sum;
}

// db[k] = sum over n, p, q of dy[n][k][p][q], accumulated in double.
template <typename T>
void bias_gradient(const Conv2dDesc& d, const T* dy, T* db);

}  // namespace convkit::cpu
