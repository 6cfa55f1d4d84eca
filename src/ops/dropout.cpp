// Inverted dropout. The mask (already scaled by 1/(1-p)) comes from the
// Philox stream at the generator's current (seed, offset), so every backend
// draws the same mask for the same seed. The backward node keeps only
// (seed, offset, p) and draws the mask again from them: a mask is a pure
// function of its counter, so regenerating it costs one pass that writes it,
// where storing it would hold numel values from the forward to the backward
// (a whole activation per dropout layer).
#include "convkit/ops/elementwise.h"
#include "core/op_scope.h"
#include "convkit/ops/factory.h"
#include "convkit/ops/nn_functional.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using V = std::vector<Tensor>;

namespace {

// The mask of `like`'s shape, dtype and device at (seed, offset): contiguous,
// element i from stream element offset + i.
Tensor dropout_mask_like(const Tensor& like, std::uint64_t seed, std::uint64_t offset, double p) {
  const Tensor mask = detail::new_empty(like.shape(), like);
  if (mask.numel() > 0) detail::backend_of(like).dropout_mask(mask, seed, offset, p);
  return mask;
}

}  // namespace

Tensor dropout(const Tensor& x, double p, bool training) {
  const detail::OpScope op_scope("dropout");
  detail::check_floating("dropout", x);
  CK_CHECK(p >= 0 && p <= 1, "dropout: probability p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;  // as torch: the input itself, no draw from the generator

  Generator& gen = default_generator();
  const std::uint64_t offset = gen.reserve(static_cast<std::uint64_t>(x.numel()));
  const Tensor mask = dropout_mask_like(x, gen.seed, offset, p);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = mul(x.detach(), mask);
  }
  return record(out, "DropoutBackward", {x}, [seed = gen.seed, offset, p](const Tensor& g) {
    const Tensor again = dropout_mask_like(g, seed, offset, p);
    if (autograd::exclusively_owned(g)) {  // in place, as relu's backward
      detail::backend_of(g).binary(BinaryOp::mul, g, again, g);
      return V{g};
    }
    return V{mul(g, again)};
  });
}

}  // namespace convkit
