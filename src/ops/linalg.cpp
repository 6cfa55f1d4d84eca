#include "convkit/ops/linalg.h"
#include "core/op_scope.h"

#include "convkit/ops/elementwise.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using autograd::SavedTensor;
using V = std::vector<Tensor>;

namespace {

// A backend matmul operand needs unit stride on one of its two matrix dims.
Tensor matrix_ready(const Tensor& t) {
  const std::int64_t r = t.dim();
  if (t.stride(r - 1) == 1 || t.stride(r - 2) == 1) return t;
  return t.contiguous();
}

// [..., M, K] @ [..., K, N] for rank >= 2 operands with broadcast batch dims.
Tensor matmul_nd(const Tensor& a, const Tensor& b) {
  const std::int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  CK_CHECK(b.size(-2) == K, "matmul: shapes ", a.shape(), " and ", b.shape(),
           " cannot be multiplied (", K, " columns vs ", b.size(-2), " rows)");
  const Shape a_batch(std::vector<std::int64_t>(a.shape().begin(), a.shape().end() - 2));
  const Shape b_batch(std::vector<std::int64_t>(b.shape().begin(), b.shape().end() - 2));
  const Shape batch = broadcast_shapes(a_batch, b_batch, "matmul");
  std::vector<std::int64_t> out_dims = batch.dims();
  out_dims.push_back(M);
  out_dims.push_back(N);
  Tensor out = detail::new_empty(Shape(out_dims), a);
  NoGradGuard no_grad;
  auto as3 = [&](const Tensor& t, std::int64_t rows, std::int64_t cols) {
    std::vector<std::int64_t> full = batch.dims();
    full.push_back(rows);
    full.push_back(cols);
    Tensor e = matrix_ready(t.expand(Shape(full)));
    // Batch dims that cannot merge into one stride are made contiguous.
    if (batch.rank() > 1) e = e.reshape({batch.numel(), rows, cols});
    if (batch.rank() == 0) e = e.unsqueeze(0);
    return matrix_ready(e);
  };
  Tensor out3 = out.view({batch.numel(), M, N});
  if (M * N * batch.numel() == 0) return out;
  if (K == 0) { detail::backend_of(a).fill(out3, 0); return out; }
  detail::backend_of(a).matmul(as3(a, M, K), as3(b, K, N), out3);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  const detail::OpScope op_scope("matmul");
  detail::check_same("matmul", a_in, b_in);
  detail::check_floating("matmul", a_in);
  CK_CHECK(a_in.dim() >= 1 && b_in.dim() >= 1, "matmul: both operands need at least 1 dim, got ",
           a_in.shape(), " and ", b_in.shape());
  // Vectors become matrices and the added dim is dropped again at the end.
  const Tensor a = a_in.dim() == 1 ? a_in.unsqueeze(0) : a_in;
  const Tensor b = b_in.dim() == 1 ? b_in.unsqueeze(1) : b_in;
  Tensor out = matmul_nd(a.detach(), b.detach());
  out = record(out, "MatmulBackward", {a, b}, [sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g) {
    const Tensor& x = sa.get();
    const Tensor& y = sb.get();
    return V{sum_to(matmul_nd(g, y.transpose(-1, -2)), x.shape()),
             sum_to(matmul_nd(x.transpose(-1, -2), g), y.shape())};
  });
  if (a_in.dim() == 1) out = out.squeeze(-2);
  if (b_in.dim() == 1) out = out.squeeze(-1);
  return out;
}

}  // namespace convkit
