// Tensor's view members (declared in convkit/core/tensor.h): they share
// storage and record autograd, so they live in ops, above the graph.
#include <algorithm>
#include <numeric>

#include "convkit/autograd/node.h"
#include "convkit/core/tensor.h"
#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"

namespace convkit {

using autograd::record;

// ---------------------------------------------------------------- views

namespace {

Tensor view_of(const Tensor& base, Shape shape, std::vector<std::int64_t> strides,
               std::int64_t offset) {
  return Tensor::make_view(base.storage(), std::move(shape), std::move(strides), offset, base.dtype());
}

// Resolves one -1 in a requested shape against numel.
Shape infer_shape(const Shape& requested, std::int64_t numel, const char* op, const Shape& from) {
  Shape out = requested;
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      CK_CHECK(infer < 0, op, ": only one dimension can be -1, got ", requested);
      infer = static_cast<std::int64_t>(i);
    } else {
      CK_CHECK(out[i] >= 0, op, ": invalid size ", out[i], " in ", requested);
      known *= out[i];
    }
  }
  if (infer >= 0) {
    CK_CHECK(known > 0 && numel % known == 0, op, ": cannot reshape ", from, " (", numel,
             " elements) into ", requested);
    out[static_cast<std::size_t>(infer)] = numel / known;
  }
  CK_CHECK(out.numel() == numel, op, ": cannot reshape ", from, " (", numel, " elements) into ",
           requested, " (", out.numel(), " elements)");
  return out;
}

// Strides for viewing (shape, strides) as `target` without copying, if possible
// (PyTorch's computeStride: chunks of dims that are contiguous among themselves).
bool view_strides(const Shape& shape, const std::vector<std::int64_t>& strides, const Shape& target,
                  std::vector<std::int64_t>& out) {
  out.assign(target.size(), 0);
  if (shape.numel() <= 1) {  // zero or one element: any strides address it
    out = contiguous_strides(target);
    return true;
  }
  std::int64_t view_d = static_cast<std::int64_t>(target.size()) - 1;
  std::int64_t chunk_base = strides.empty() ? 1 : strides.back();
  std::int64_t tensor_numel = 1, view_numel = 1;
  for (std::int64_t d = static_cast<std::int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[static_cast<std::size_t>(d)];
    if (d == 0 || (shape[static_cast<std::size_t>(d - 1)] != 1 &&
                   strides[static_cast<std::size_t>(d - 1)] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || target[static_cast<std::size_t>(view_d)] == 1)) {
        out[static_cast<std::size_t>(view_d)] = view_numel * chunk_base;
        view_numel *= target[static_cast<std::size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base = strides[static_cast<std::size_t>(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

Tensor Tensor::view(const Shape& requested) const {
  const Shape target = infer_shape(requested, numel(), "view", shape());
  std::vector<std::int64_t> st;
  CK_CHECK(view_strides(shape(), strides(), target, st), "view: a tensor of shape ", shape(),
           " with strides incompatible with ", target,
           " cannot be viewed without a copy; use reshape() instead");
  Tensor out = view_of(*this, target, st, offset());
  const Shape in_shape = shape();
  return record(out, "ViewBackward", {*this},
                [in_shape](const Tensor& g) { return std::vector<Tensor>{g.reshape(in_shape)}; });
}

Tensor Tensor::reshape(const Shape& requested) const {
  const Shape target = infer_shape(requested, numel(), "reshape", shape());
  std::vector<std::int64_t> st;
  if (view_strides(shape(), strides(), target, st)) return view(target);
  return contiguous().view(target);
}

Tensor Tensor::permute(const std::vector<std::int64_t>& order) const {
  CK_CHECK(static_cast<std::int64_t>(order.size()) == dim(), "permute: got ", order.size(),
           " dims for a tensor of shape ", shape());
  std::vector<std::int64_t> sizes(order.size()), st(order.size()), inverse(order.size(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto d = static_cast<std::size_t>(wrap_dim(order[i], dim(), "permute"));
    CK_CHECK(inverse[d] < 0, "permute: dim ", order[i], " appears twice");
    inverse[d] = static_cast<std::int64_t>(i);
    sizes[i] = shape()[d];
    st[i] = strides()[d];
  }
  Tensor out = view_of(*this, Shape(sizes), st, offset());
  return record(out, "PermuteBackward", {*this},
                [inverse](const Tensor& g) { return std::vector<Tensor>{g.permute(inverse)}; });
}

Tensor Tensor::transpose(std::int64_t d0, std::int64_t d1) const {
  std::vector<std::int64_t> order(static_cast<std::size_t>(dim()));
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[static_cast<std::size_t>(wrap_dim(d0, dim(), "transpose"))],
            order[static_cast<std::size_t>(wrap_dim(d1, dim(), "transpose"))]);
  return permute(order);
}

Tensor Tensor::t() const {
  CK_CHECK(dim() == 2, "t: expected a 2-D tensor, got shape ", shape());
  return transpose(0, 1);
}

Tensor Tensor::slice(std::int64_t d, std::int64_t start, std::int64_t end, std::int64_t step) const {
  const auto dd = static_cast<std::size_t>(wrap_dim(d, dim(), "slice"));
  CK_CHECK(step > 0, "slice: step must be positive, got ", step);
  const std::int64_t n = shape()[dd];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<std::int64_t>(start, 0, n);
  end = std::clamp<std::int64_t>(end, start, n);
  Shape sizes = shape();
  std::vector<std::int64_t> st = strides();
  sizes[dd] = (end - start + step - 1) / step;
  st[dd] *= step;
  Tensor out = view_of(*this, sizes, st, offset() + start * strides()[dd]);
  const Shape in_shape = shape();
  return record(out, "SliceBackward", {*this}, [in_shape, dd, start, end, step](const Tensor& g) {
    Tensor full = zeros(in_shape, TensorOptions().dtype(g.dtype()).device(g.device()));
    full.slice(static_cast<std::int64_t>(dd), start, end, step).copy_(g);
    return std::vector<Tensor>{full};
  });
}

Tensor Tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t length) const {
  const std::int64_t n = size(d);
  CK_CHECK(start >= 0 && length >= 0 && start + length <= n, "narrow: [", start, ", ",
           start + length, ") is out of range for dim ", d, " of size ", n, " in shape ", shape());
  return slice(d, start, start + length);
}

Tensor Tensor::select(std::int64_t d, std::int64_t index) const {
  const std::int64_t n = size(d);
  CK_CHECK(index >= -n && index < n, "select: index ", index, " is out of range for dim ", d,
           " of size ", n, " in shape ", shape());
  if (index < 0) index += n;
  return slice(d, index, index + 1).squeeze(d);
}

Tensor Tensor::unsqueeze(std::int64_t d) const {
  const auto dd = static_cast<std::size_t>(wrap_dim(d, dim() + 1, "unsqueeze"));
  std::vector<std::int64_t> sizes = shape().dims();
  sizes.insert(sizes.begin() + static_cast<std::ptrdiff_t>(dd), 1);
  return view(Shape(sizes));
}

Tensor Tensor::squeeze(std::int64_t d) const {
  const auto dd = static_cast<std::size_t>(wrap_dim(d, dim(), "squeeze"));
  if (shape()[dd] != 1) return *this;
  std::vector<std::int64_t> sizes = shape().dims();
  sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(dd));
  return view(Shape(sizes));
}

Tensor Tensor::expand(const Shape& target) const {
  CK_CHECK(target.rank() >= dim(), "expand: cannot expand shape ", shape(), " to ", target);
  const std::size_t lead = target.size() - shape().size();
  std::vector<std::int64_t> st(target.size(), 0);
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (i < lead) continue;
    const std::int64_t have = shape()[i - lead];
    CK_CHECK(have == target[i] || have == 1, "expand: cannot expand shape ", shape(), " to ",
             target, " (dim ", i, ": ", have, " vs ", target[i], ")");
    st[i] = have == 1 && target[i] != 1 ? 0 : strides()[i - lead];
  }
  if (target == shape()) return *this;
  Tensor out = view_of(*this, target, st, offset());
  const Shape in_shape = shape();
  return record(out, "ExpandBackward", {*this},
                [in_shape](const Tensor& g) { return std::vector<Tensor>{sum_to(g, in_shape)}; });
}

Tensor Tensor::flatten(std::int64_t start_dim, std::int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const auto s = static_cast<std::size_t>(wrap_dim(start_dim, dim(), "flatten"));
  const auto e = static_cast<std::size_t>(wrap_dim(end_dim, dim(), "flatten"));
  CK_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  std::vector<std::int64_t> sizes;
  for (std::size_t i = 0; i < s; ++i) sizes.push_back(shape()[i]);
  std::int64_t merged = 1;
  for (std::size_t i = s; i <= e; ++i) merged *= shape()[i];
  sizes.push_back(merged);
  for (std::size_t i = e + 1; i < shape().size(); ++i) sizes.push_back(shape()[i]);
  return reshape(Shape(sizes));
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

}  // namespace convkit
