// Inverted dropout. The mask (already scaled by 1/(1-p)) comes from the
// Philox stream at the generator's current (seed, offset), so every backend
// draws the same mask for the same seed; the backward multiplies by it again.
#include "convkit/ops/elementwise.h"
#include "core/op_scope.h"
#include "convkit/ops/factory.h"
#include "convkit/ops/nn_functional.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using V = std::vector<Tensor>;

Tensor dropout(const Tensor& x, double p, bool training) {
  const detail::OpScope op_scope("dropout");
  detail::check_floating("dropout", x);
  CK_CHECK(p >= 0 && p <= 1, "dropout: probability p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;  // as torch: the input itself, no draw from the generator

  Generator& gen = default_generator();
  const std::uint64_t offset = gen.reserve(static_cast<std::uint64_t>(x.numel()));
  const Tensor mask = detail::new_empty(x.shape(), x);
  if (mask.numel() > 0) detail::backend_of(x).dropout_mask(mask, gen.seed, offset, p);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = mul(x.detach(), mask);
  }
  // The mask is private to this node: nothing can modify it in place.
  return record(out, "DropoutBackward", {x}, [mask](const Tensor& g) {
    if (autograd::exclusively_owned(g) && g.shape() == mask.shape()) {  // in place, as relu's backward
      detail::backend_of(g).binary(BinaryOp::mul, g, mask, g);
      return V{g};
    }
    return V{mul(g, mask)};
  });
}

}  // namespace convkit
