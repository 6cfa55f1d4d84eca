// Batched matrix product through Eigen, on mapped buffers (no copies): each
// operand is viewed as row-major or column-major according to its strides.
#include <Eigen/Core>

#include "cpu/cpu_backend.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu {

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

}  // namespace

void CpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_floating(a.dtype(), "matmul", [&]<typename T>() {
    for (std::int64_t batch = 0; batch < out.size(0); ++batch) {
      OutMap<T> c(static_cast<T*>(out.raw_data()) + batch * out.size(1) * out.size(2),
                  out.size(1), out.size(2));
      with_matrix<T>(a, batch, [&](const auto& ma) {
        with_matrix<T>(b, batch, [&](const auto& mb) { c.noalias() = ma * mb; });
      });
    }
  });
}

}  // namespace convkit::cpu
