// Tensor's libtorch-style indexing (declared in convkit/core/tensor.h): each
// index becomes one of the existing views (select, slice, unsqueeze), so the
// result shares storage and its autograd comes from theirs.
#include <limits>

#include "convkit/core/tensor.h"

namespace convkit {

using indexing::TensorIndex;

namespace {

bool consumes_a_dim(const TensorIndex& i) {
  return i.kind() == TensorIndex::Kind::integer || i.kind() == TensorIndex::Kind::slice;
}

}  // namespace

Tensor Tensor::operator[](std::int64_t i) const {
  CK_CHECK(dim() > 0, "operator[]: cannot index a 0-d tensor (use item())");
  return index({i});
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index(std::vector<TensorIndex>(indices));
}

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  std::int64_t consumed = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    if (consumes_a_dim(i)) ++consumed;
    if (i.kind() == TensorIndex::Kind::ellipsis) ++ellipses;
  }
  CK_CHECK(ellipses <= 1, "index: at most one Ellipsis, got ", ellipses);
  CK_CHECK(consumed <= dim(), "index: ", consumed, " indices for a tensor of shape ", shape(),
           " (", dim(), " dims)");

  Tensor out = *this;
  std::int64_t at = 0;      // dim of `out` the next index applies to
  std::int64_t source = 0;  // the same dim numbered in *this, for errors
  std::int64_t left = consumed;
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case TensorIndex::Kind::integer: {
        const std::int64_t n = out.size(at);
        CK_CHECK(i.integer() >= -n && i.integer() < n, "index: index ", i.integer(),
                 " is out of range for dim ", source, " of size ", n, " in shape ", shape());
        out = out.select(at, i.integer());
        ++source;
        --left;
        break;
      }
      case TensorIndex::Kind::slice: {
        const indexing::Slice& s = i.slice();
        const std::int64_t step = s.step.value_or(1);
        CK_CHECK(step > 0, "index: a slice's step must be positive, got ", step, " (dim ", source, ")");
        out = out.slice(at, s.start.value_or(0), s.stop.value_or(std::numeric_limits<std::int64_t>::max()),
                        step);
        ++at;
        ++source;
        --left;
        break;
      }
      case TensorIndex::Kind::none:
        out = out.unsqueeze(at);
        ++at;
        break;
      case TensorIndex::Kind::ellipsis: {
        const std::int64_t skipped = dim() - source - left;
        at += skipped;
        source += skipped;
        break;
      }
    }
  }
  return out;
}

}  // namespace convkit
