#include "convkit/ops/reduce.h"
#include "core/op_scope.h"

#include <algorithm>

#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using autograd::SavedTensor;
using V = std::vector<Tensor>;

namespace {

// Sorted, de-duplicated, non-negative dims; empty means every dim.
std::vector<std::int64_t> normalize_dims(const Tensor& x, const std::vector<std::int64_t>& dims,
                                         const char* op) {
  std::vector<std::int64_t> out;
  if (dims.empty()) {
    for (std::int64_t d = 0; d < x.dim(); ++d) out.push_back(d);
    return out;
  }
  for (auto d : dims) out.push_back(wrap_dim(d, x.dim(), op));
  std::sort(out.begin(), out.end());
  CK_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), op,
           ": a dim is repeated in the reduction dims of a tensor of shape ", x.shape());
  return out;
}

Shape keep_shape(const Tensor& x, const std::vector<std::int64_t>& dims) {
  Shape s = x.shape();
  for (auto d : dims) s[static_cast<std::size_t>(d)] = 1;
  return s;
}

Shape drop_shape(const Tensor& x, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> s;
  for (std::int64_t d = 0; d < x.dim(); ++d)
    if (!std::binary_search(dims.begin(), dims.end(), d)) s.push_back(x.size(d));
  return Shape(s);
}

Tensor reduce_raw(ReduceOp op, const char* name, const Tensor& x, const std::vector<std::int64_t>& dims,
                  bool keepdim) {
  const detail::OpScope op_scope(name);
  detail::check_floating(name, x);
  if (op != ReduceOp::sum)
    CK_CHECK(x.numel() > 0, name, ": cannot reduce an empty tensor of shape ", x.shape());
  Tensor out = detail::new_empty(keep_shape(x, dims), x);
  detail::backend_of(x).reduce(op, x, out);
  return keepdim ? out : out.reshape(drop_shape(x, dims));
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims_in, bool keepdim) {
  const auto dims = normalize_dims(x, dims_in, "sum");
  Tensor out = reduce_raw(ReduceOp::sum, "sum", x, dims, keepdim);
  const Shape in_shape = x.shape(), kept = keep_shape(x, dims);
  return record(out, "SumBackward", {x}, [in_shape, kept](const Tensor& g) {
    return V{g.reshape(kept).expand(in_shape)};
  });
}

Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims_in, bool keepdim) {
  const auto dims = normalize_dims(x, dims_in, "mean");
  std::int64_t count = 1;
  for (auto d : dims) count *= x.size(d);
  CK_CHECK(count > 0, "mean: reducing over an empty set of elements in shape ", x.shape());
  return mul_scalar(sum(x, dims, keepdim), 1.0 / static_cast<double>(count));
}

Tensor var(const Tensor& x, const std::vector<std::int64_t>& dims_in, bool unbiased, bool keepdim) {
  const auto dims = normalize_dims(x, dims_in, "var");
  std::int64_t count = 1;
  for (auto d : dims) count *= x.size(d);
  CK_CHECK(count > (unbiased ? 1 : 0), "var: need at least ", unbiased ? 2 : 1,
           " elements per reduction, got ", count, " from shape ", x.shape());
  const Tensor centered = sub(x, mean(x, dims, true));
  return mul_scalar(sum(square(centered), dims, keepdim),
                    1.0 / static_cast<double>(unbiased ? count - 1 : count));
}

Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim) {
  const detail::OpScope op_scope("argmax");
  detail::check_floating("argmax", x);
  const std::int64_t d = wrap_dim(dim, x.dim(), "argmax");
  CK_CHECK(x.dim() > 0 && x.size(d) > 0, "argmax: empty dim ", dim, " in shape ", x.shape());
  Tensor out = detail::new_empty(keep_shape(x, {d}), x, DType::int64);
  detail::backend_of(x).argmax(x, d, out);
  return keepdim ? out : out.reshape(drop_shape(x, {d}));
}

Tensor max(const Tensor& x, std::int64_t dim, bool keepdim) {
  detail::check_floating("max", x);
  const std::int64_t d = wrap_dim(dim, x.dim(), "max");
  Tensor out = reduce_raw(ReduceOp::max, "max", x, {d}, keepdim);
  return record(out, "MaxBackward", {x}, [sx = SavedTensor(x), d](const Tensor& g) {
    const Tensor& v = sx.get();
    // One-hot of the first maximum along d (argmax), broadcast against g.
    const Tensor idx = argmax(v, d, true).to(v.dtype());
    Shape pos_shape(std::vector<std::int64_t>(static_cast<std::size_t>(v.dim()), 1));
    pos_shape[static_cast<std::size_t>(d)] = v.size(d);
    const Tensor pos = arange(0, static_cast<double>(v.size(d)), 1,
                              TensorOptions().dtype(v.dtype()).device(v.device())).reshape(pos_shape);
    Shape kept = v.shape();
    kept[static_cast<std::size_t>(d)] = 1;
    return V{mul(eq(pos, idx), g.reshape(kept))};
  });
}

namespace {
// Max or min of all elements; ties share the gradient evenly.
Tensor extreme_all(ReduceOp op, const char* name, const Tensor& x) {
  Tensor out = reduce_raw(op, name, x, normalize_dims(x, {}, name), false);
  return record(out, name, {x}, [sx = SavedTensor(x), so = SavedTensor(out.detach())](const Tensor& g) {
    const Tensor mask = eq(sx.get(), so.get());
    return V{mul(div(mask, sum(mask)), g)};
  });
}
}  // namespace

Tensor max(const Tensor& x) { return extreme_all(ReduceOp::max, "max", x); }
Tensor min(const Tensor& x) { return extreme_all(ReduceOp::min, "min", x); }

}  // namespace convkit
