// Losses. cross_entropy is one fused backend kernel (stable log-softmax + NLL
// with label smoothing, backward softmax - target); the others are built from
// differentiable ops, with a hand-written backward where the composite one
// would be wrong or wasteful.
#include "convkit/ops/elementwise.h"
#include "core/op_scope.h"
#include "convkit/ops/factory.h"
#include "convkit/ops/nn_functional.h"
#include "convkit/ops/reduce.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using autograd::SavedTensor;
using V = std::vector<Tensor>;

namespace {

Tensor apply_reduction(const Tensor& per_element, Reduction reduction) {
  switch (reduction) {
    case Reduction::mean: return mean(per_element);
    case Reduction::sum: return sum(per_element);
    case Reduction::none: return per_element;
  }
  CK_FAIL("loss: unknown reduction ", static_cast<int>(reduction));
}

// scores: [N, C] floating; targets: int64 [N] of class indices in [0, C).
// The values are checked here, on the host, unless `kernel_checks` says that
// the op's kernel checks them where it reads them: cross_entropy's on a
// backend that implements it (sim, cuda), which records a bad target on the
// device and raises it at the next synchronisation (src/gpu/target_check.h),
// so that a training step never waits to copy its labels back.
void check_class_targets(const char* op, const Tensor& scores, const Tensor& targets, bool kernel_checks = false) {
  detail::check_floating(op, scores);
  CK_CHECK(scores.dim() == 2, op, ": expected scores of shape [N, classes], got ", scores.shape());
  detail::check_defined(op, targets, "targets");
  CK_CHECK(targets.dtype() == DType::int64, op, ": targets must be int64 class indices, got ",
           targets.dtype(), " targets of shape ", targets.shape());
  CK_CHECK(targets.device() == scores.device(), op, ": targets are on ", targets.device(),
           " but the scores are on ", scores.device());
  CK_CHECK(targets.dim() == 1 && targets.size(0) == scores.size(0), op, ": targets must have shape [",
           scores.size(0), "] for scores of shape ", scores.shape(), ", got ", targets.shape());
  if (kernel_checks) return;
  const std::int64_t classes = scores.size(1);
  const auto values = targets.to_vector<std::int64_t>();
  for (std::size_t i = 0; i < values.size(); ++i)
    CK_CHECK(values[i] >= 0 && values[i] < classes, op, ": target ", values[i], " at position ", i,
             " is out of range for ", classes, " classes (expected 0 to ", classes - 1, ")");
}

void check_same_shape(const char* op, const Tensor& input, const Tensor& target) {
  detail::check_same(op, input, target);
  detail::check_floating(op, input);
  CK_CHECK(input.shape() == target.shape(), op, ": input ", input.shape(), " and target ", target.shape(),
           " must have the same shape");
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, double label_smoothing,
                     Reduction reduction) {
  const detail::OpScope op_scope("cross_entropy");
  const bool kernel_checks = logits.device() != kCPU &&
                             detail::backend_of(logits).supports(BackendOp::cross_entropy_forward);
  check_class_targets("cross_entropy", logits, targets, kernel_checks);
  CK_CHECK(label_smoothing >= 0 && label_smoothing <= 1,
           "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  CK_CHECK(logits.size(1) > 0, "cross_entropy: scores of shape ", logits.shape(), " have no classes");
  const std::int64_t N = logits.size(0);
  const Tensor x = logits.detach().contiguous();
  const Tensor t = targets.contiguous();
  Tensor loss = detail::new_empty({N}, logits);
  const Tensor lse = detail::new_empty({N}, logits);
  if (N > 0) detail::backend_of(x).cross_entropy_forward(x, t, label_smoothing, loss, lse);
  record(loss, "CrossEntropyBackward", {logits},
         [sx = SavedTensor(x), st = SavedTensor(t), lse, label_smoothing](const Tensor& g) {
           const Tensor& xs = sx.get();
           const Tensor& ts = st.get();
           Tensor grad = detail::new_empty(xs.shape(), xs);
           if (xs.numel() > 0)
             detail::backend_of(xs).cross_entropy_backward(xs, ts, lse, g.contiguous(), label_smoothing, grad);
           return V{grad};
         });
  return apply_reduction(loss, reduction);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, Reduction reduction) {
  check_class_targets("nll_loss", log_probs, targets);
  const std::int64_t N = log_probs.size(0), C = log_probs.size(1);
  const TensorOptions like = TensorOptions().dtype(log_probs.dtype()).device(log_probs.device());
  // loss[n] = -log_probs[n, target[n]], picked by a one-hot mask so that the
  // gradient comes from the differentiable mul and sum.
  const Tensor onehot = eq(arange(0, static_cast<double>(C), 1, like).reshape({1, C}),
                           targets.to(log_probs.dtype()).reshape({N, 1}));
  return apply_reduction(neg(sum(mul(log_probs, onehot), {1})), reduction);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_same_shape("mse_loss", input, target);
  return apply_reduction(square(sub(input, target)), reduction);
}

// max(x, 0) - x * t + log(1 + exp(-|x|)); the backward sigmoid(x) - t is
// written out because the composite one is wrong at x = 0, where relu and abs
// have no derivative.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets, Reduction reduction) {
  check_same_shape("binary_cross_entropy_with_logits", logits, targets);
  Tensor loss;
  {
    NoGradGuard no_grad;
    const Tensor x = logits.detach(), t = targets.detach();
    loss = add(sub(relu(x), mul(x, t)), log(add_scalar(exp(neg(abs(x))), 1.0)));
  }
  record(loss, "BinaryCrossEntropyWithLogitsBackward", {logits, targets},
         [sx = SavedTensor(logits.detach()), st = SavedTensor(targets.detach())](const Tensor& g) {
           const Tensor& x = sx.get();
           return V{mul(g, sub(sigmoid(x), st.get())), neg(mul(g, x))};
         });
  return apply_reduction(loss, reduction);
}

}  // namespace convkit
