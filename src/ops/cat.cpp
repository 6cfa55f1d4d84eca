// Concatenation: copy each input into its slice of a new tensor; the backward
// hands each input the matching slice of the gradient.
#include "convkit/ops/nn_functional.h"
#include "core/op_scope.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using V = std::vector<Tensor>;

Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  const detail::OpScope op_scope("cat");
  CK_CHECK(!tensors.empty(), "cat: expected at least one tensor");
  const Tensor& first = tensors.front();
  detail::check_defined("cat", first, "tensor 0");
  CK_CHECK(first.dim() > 0, "cat: cannot concatenate scalars (0-dim tensors)");
  const std::int64_t d = wrap_dim(dim, first.dim(), "cat");
  Shape out_shape = first.shape();
  out_shape[static_cast<std::size_t>(d)] = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    detail::check_defined("cat", t, "an input tensor");
    detail::check_same("cat", first, t);
    bool match = t.dim() == first.dim();
    for (std::int64_t k = 0; match && k < t.dim(); ++k) match = k == d || t.size(k) == first.size(k);
    CK_CHECK(match, "cat: tensor ", i, " has shape ", t.shape(), " but tensor 0 has shape ", first.shape(),
             "; all dims except dim ", d, " must match");
    out_shape[static_cast<std::size_t>(d)] += t.size(d);
  }
  Tensor out = detail::new_empty(out_shape, first);
  std::vector<std::int64_t> sizes;
  {
    NoGradGuard no_grad;
    std::int64_t start = 0;
    for (const Tensor& t : tensors) {
      sizes.push_back(t.size(d));
      if (t.numel() > 0) out.narrow(d, start, t.size(d)).copy_(t.detach());
      start += t.size(d);
    }
  }
  return record(out, "CatBackward", tensors, [d, sizes](const Tensor& g) {
    V grads;
    std::int64_t start = 0;
    for (const std::int64_t n : sizes) {
      grads.push_back(g.narrow(d, start, n));
      start += n;
    }
    return grads;
  });
}

}  // namespace convkit
