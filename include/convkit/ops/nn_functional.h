#pragma once
// The functional layer ops that are not convolution or pooling: dense,
// normalisation, dropout, activations, shape helpers and losses. All are
// differentiable and run on every backend.
#include <cstdint>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit {

// y = x @ w^T + b, with w: [out, in] (PyTorch's layout) and b: [out] or undefined.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = Tensor());

// Batch normalisation over dim 1 of [N, C] or [N, C, H, W]. In training mode it
// normalises with the batch statistics and, when running_mean/var are defined,
// updates them in place: running = (1 - momentum) * running + momentum * batch
// (the unbiased variance, as PyTorch). In eval mode it uses the running values.
// weight/bias ([C]) may be undefined.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training,
                  double momentum = 0.1, double eps = 1e-5);
// relu(batch_norm(...)), with the ReLU applied in batch norm's own pass over
// x (no second pass, no intermediate tensor); same values and gradients.
Tensor batch_norm_relu(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training,
                       double momentum = 0.1, double eps = 1e-5);
// relu(batch_norm(x, ...) + residual), the end of a ResNet block, in one pass
// over x (no batch-norm output, no sum); same values and gradients as the
// three ops, residual of x's shape and getting its gradient too. The backward
// masks the gradient in the pass that takes batch norm's sums (docs/layers.md).
Tensor batch_norm_add_relu(const Tensor& x, const Tensor& residual, const Tensor& running_mean,
                           const Tensor& running_var, const Tensor& weight, const Tensor& bias, bool training,
                           double momentum = 0.1, double eps = 1e-5);

// Inverted dropout: zeroes each element with probability p and scales the rest
// by 1/(1-p) in training; the identity in eval. The mask is drawn from the
// Philox generator (seed, offset), so every backend draws the same mask.
Tensor dropout(const Tensor& x, double p, bool training);

Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
// x * sigmoid(x) (also called swish).
Tensor silu(const Tensor& x);
Tensor softmax(const Tensor& x, std::int64_t dim);
Tensor log_softmax(const Tensor& x, std::int64_t dim);

// Concatenation along dim; every other dim must match.
Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim);

enum class Reduction { mean, sum, none };

// logits: [N, classes], targets: int64 [N] with values in [0, classes).
// label_smoothing in [0, 1] mixes the one-hot target with the uniform distribution.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, double label_smoothing = 0.0,
                     Reduction reduction = Reduction::mean);
// log_probs: [N, classes], targets: int64 [N].
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, Reduction reduction = Reduction::mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);
// Numerically stable: max(x, 0) - x * t + log(1 + exp(-|x|)).
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                        Reduction reduction = Reduction::mean);

}  // namespace convkit
