#include "convkit/train/loss.h"

#include "convkit/autograd/grad_mode.h"
#include "convkit/core/error.h"
#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"
#include "convkit/ops/nn_functional.h"
#include "convkit/ops/reduce.h"

namespace convkit::train {

std::string loss_kind_name(LossKind kind) {
  switch (kind) {
    case LossKind::automatic: return "automatic";
    case LossKind::cross_entropy: return "cross_entropy";
    case LossKind::binary_cross_entropy: return "binary_cross_entropy";
  }
  CK_FAIL("loss_kind_name: unknown LossKind ", static_cast<int>(kind));
}

LossKind parse_loss_kind(const std::string& name) {
  for (LossKind k : {LossKind::automatic, LossKind::cross_entropy, LossKind::binary_cross_entropy})
    if (name == loss_kind_name(k)) return k;
  CK_FAIL("unknown loss '", name, "' (expected automatic, cross_entropy or binary_cross_entropy)");
}

LossKind resolve_loss(LossKind kind, const Tensor& logits) {
  CK_CHECK(logits.defined(), "loss: the model returned an undefined tensor");
  const bool one_column = logits.dim() == 1 || (logits.dim() == 2 && logits.size(1) == 1);
  CK_CHECK(logits.dim() == 1 || logits.dim() == 2,
           "loss: a classifier's output must be logits [N, classes] (or [N] for a binary "
           "classifier), but the model returned shape ", logits.shape());
  if (kind == LossKind::automatic)
    return one_column ? LossKind::binary_cross_entropy : LossKind::cross_entropy;
  if (kind == LossKind::cross_entropy)
    CK_CHECK(!one_column, "loss cross_entropy: logits of shape ", logits.shape(),
             " have one class; a model with one output needs binary_cross_entropy");
  if (kind == LossKind::binary_cross_entropy)
    CK_CHECK(one_column, "loss binary_cross_entropy: logits must be [N, 1] or [N], got ",
             logits.shape());
  return kind;
}

std::int64_t num_classes_of(const Tensor& logits) {
  return resolve_loss(LossKind::automatic, logits) == LossKind::binary_cross_entropy
             ? 2
             : logits.size(1);
}

namespace {

void check_labels(const char* what, const Tensor& logits, const Tensor& labels) {
  CK_CHECK(labels.defined() && labels.dtype() == DType::int64 && labels.dim() == 1,
           what, ": labels must be int64 [N], got ",
           labels.defined() ? dtype_name(labels.dtype()) : "undefined", " ",
           labels.defined() ? labels.shape() : Shape{});
  CK_CHECK(labels.size(0) == logits.size(0), what, ": ", labels.size(0), " labels for logits of shape ",
           logits.shape());
  CK_CHECK(labels.device() == logits.device(), what, ": labels on ", labels.device(),
           " but logits on ", logits.device());
}

}  // namespace

Tensor compute_loss(LossKind kind, const Tensor& logits, const Tensor& labels) {
  kind = resolve_loss(kind, logits);
  if (kind == LossKind::cross_entropy) {
    check_labels("loss cross_entropy", logits, labels);
    return cross_entropy(logits, labels);
  }
  check_labels("loss binary_cross_entropy", logits, labels);
  const Tensor flat = logits.reshape({logits.size(0)});
  // Labels are class indices; BCE wants them as float targets in the logits' dtype.
  return binary_cross_entropy_with_logits(flat, labels.to(logits.dtype()));
}

Tensor predicted_classes(LossKind kind, const Tensor& logits) {
  kind = resolve_loss(kind, logits);
  NoGradGuard no_grad;
  if (kind == LossKind::cross_entropy) return argmax(logits, 1);
  // logit > 0 <=> sigmoid(logit) > 1/2 <=> class 1.
  const Tensor flat = logits.reshape({logits.size(0)});
  return gt(flat, zeros_like(flat)).to(DType::int64);
}

Tensor class_probabilities(LossKind kind, const Tensor& logits) {
  kind = resolve_loss(kind, logits);
  NoGradGuard no_grad;
  if (kind == LossKind::cross_entropy) return softmax(logits, 1);
  const Tensor p = sigmoid(logits.reshape({logits.size(0), 1}));
  return cat({1.0 - p, p}, 1);
}

}  // namespace convkit::train
