// Batched matrix product through Eigen, on mapped buffers (no copies): each
// operand is viewed as row-major or column-major according to its strides.
#include <algorithm>

#include <Eigen/Core>
#include <omp.h>

#include "cpu/cpu_backend.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

namespace {

template <typename T, int Order>
using MatMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>, 0,
                          Eigen::OuterStride<>>;
template <typename T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Calls f(map) with the Eigen view of batch b of a 3-D operand.
template <typename T, typename F>
void with_matrix(const Tensor& t, std::int64_t b, F&& f) {
  const T* p = static_cast<const T*>(t.raw_data()) + b * t.stride(0);
  const std::int64_t rows = t.size(1), cols = t.size(2);
  if (t.stride(2) == 1 || cols == 1) {
    f(MatMap<T, Eigen::RowMajor>(p, rows, cols, Eigen::OuterStride<>(std::max<std::int64_t>(t.stride(1), cols))));
  } else {
    CK_CHECK(t.stride(1) == 1 || rows == 1, "cpu matmul: operand of shape ", t.shape(),
             " with strides [", t.stride(0), ", ", t.stride(1), ", ", t.stride(2),
             "] is neither row- nor column-major");
    f(MatMap<T, Eigen::ColMajor>(p, rows, cols, Eigen::OuterStride<>(std::max<std::int64_t>(t.stride(2), rows))));
  }
}

// Below this many flops a product runs on the calling thread: waking a team
// costs more than it saves.
constexpr double kParallelFlops = 1 << 22;

// c = a * b, on every OpenMP thread when it is worth it, each thread taking
// its own block of output rows or columns and running a single-threaded
// Eigen product on it (Eigen does not thread inside a parallel region).
// Eigen's own threading shares packed panels between threads and
// synchronises per panel: on the dense layers of the zoo's networks with two
// threads it ran at 142-160 GFLOP/s, against 210-330 for separate blocks.
// Rows when there are at least 64 per thread and no fewer than the depth:
// each row block streams all of b, which costs little only when the depth
// is short (the weight gradient, whose depth is the batch). Measured with
// cold caches on cifar10-cnn's 2304 -> 512 layer, the other split was
// 10-40% slower in each of its three products.
template <typename A, typename B, typename C>
void product(const A& a, const B& b, C& c) {
  const int threads = omp_get_max_threads();
  const double flops =
      2.0 * static_cast<double>(c.rows()) * static_cast<double>(c.cols()) * static_cast<double>(a.cols());
  if (threads == 1 || omp_in_parallel() || flops < kParallelFlops) {
    c.noalias() = a * b;
    return;
  }
  const bool by_rows = c.rows() >= 64 * threads && c.rows() >= a.cols();
  const std::int64_t extent = by_rows ? c.rows() : c.cols();
  // Blocks of whole 16-float vectors, which Eigen's kernels cover without remainders.
  const std::int64_t block = ((extent + threads - 1) / threads + 15) / 16 * 16;
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t begin = std::min<std::int64_t>(extent, omp_get_thread_num() * block);
    const std::int64_t count = std::min<std::int64_t>(extent - begin, block);
    if (count > 0 && by_rows) c.middleRows(begin, count).noalias() = a.middleRows(begin, count) * b;
    if (count > 0 && !by_rows) c.middleCols(begin, count).noalias() = a * b.middleCols(begin, count);
  }
}

}  // namespace

void CpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_floating(a.dtype(), "matmul", [&]<typename T>() {
    for (std::int64_t batch = 0; batch < out.size(0); ++batch) {
      OutMap<T> c(static_cast<T*>(out.raw_data()) + batch * out.size(1) * out.size(2),
                  out.size(1), out.size(2));
      with_matrix<T>(a, batch, [&](const auto& ma) {
        with_matrix<T>(b, batch, [&](const auto& mb) { product(ma, mb, c); });
      });
    }
  });
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
