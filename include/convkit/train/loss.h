#pragma once
// The training objective of fit/evaluate and how a model's outputs become
// class probabilities and predicted classes.
//
// A classifier outputs logits [N, K]. With K >= 2 the loss is softmax cross
// entropy over K classes. A model with one output (K = 1) is a binary
// classifier: the logit is for class 1, the loss is binary cross entropy with
// logits, and its class probabilities are [1 - p, p] with p = sigmoid(logit),
// so predict() always returns one column per class.
#include <cstdint>
#include <string>

#include "convkit/core/tensor.h"

namespace convkit::train {

enum class LossKind {
  automatic,      // binary_cross_entropy for one output column, else cross_entropy
  cross_entropy,  // softmax cross entropy from logits [N, K], K >= 2
  binary_cross_entropy,  // BCE with logits, from [N, 1] or [N]
};

std::string loss_kind_name(LossKind kind);
LossKind parse_loss_kind(const std::string& name);  // the names above; throws Error otherwise

// The loss `kind` resolves to for logits of this shape; throws Error when
// the shape suits neither ([N, K] with K >= 1, or [N] for binary).
LossKind resolve_loss(LossKind kind, const Tensor& logits);

// The number of classes a model with these logits predicts (2 for one column).
std::int64_t num_classes_of(const Tensor& logits);

// Mean loss over the batch; differentiable in logits. labels: int64 [N], class
// indices (0 or 1 for binary). Errors name the shapes and the loss.
Tensor compute_loss(LossKind kind, const Tensor& logits, const Tensor& labels);

// Predicted class per row, int64 [N], on the logits' device.
Tensor predicted_classes(LossKind kind, const Tensor& logits);

// Class probabilities [N, num_classes_of(logits)]: softmax, or [1 - p, p].
Tensor class_probabilities(LossKind kind, const Tensor& logits);

}  // namespace convkit::train
