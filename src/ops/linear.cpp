// Dense layer: one GEMM against the transposed weight view plus a broadcast
// bias; both are differentiable ops, so the backward comes with them.
#include "convkit/ops/elementwise.h"
#include "convkit/ops/linalg.h"
#include "convkit/ops/nn_functional.h"
#include "ops/op_helpers.h"

namespace convkit {

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  detail::check_floating("linear", x);
  detail::check_same("linear", x, w);
  CK_CHECK(w.dim() == 2, "linear: weight must have shape [out_features, in_features], got ", w.shape());
  CK_CHECK(x.dim() >= 1 && x.size(-1) == w.size(1), "linear: input ", x.shape(),
           " does not end in in_features = ", w.size(1), " of weight ", w.shape());
  if (b.defined()) {
    detail::check_same("linear", x, b);
    CK_CHECK(b.dim() == 1 && b.size(0) == w.size(0), "linear: bias must have shape [", w.size(0),
             "] for weight ", w.shape(), ", got ", b.shape());
  }
  // Leading dims fold into the rows of one matrix product.
  std::vector<std::int64_t> out_dims(x.shape().begin(), x.shape().end() - 1);
  out_dims.push_back(w.size(0));
  const Tensor rows = x.dim() == 2 ? x : x.reshape({-1, w.size(1)});
  Tensor y = matmul(rows, w.t());
  if (x.dim() != 2) y = y.reshape(Shape(out_dims));
  return b.defined() ? add(y, b) : y;
}

}  // namespace convkit
