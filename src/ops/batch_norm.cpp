// Batch normalisation. The forward folds mean, 1/std, weight and bias into one
// per-channel scale and shift, so the backend makes a single pass over x; the
// backward is the closed-form one (two passes: per-channel sums, then the
// input gradient), not a chain of elementwise ops.
#include <cmath>
#include "core/op_scope.h"

#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"
#include "convkit/ops/nn_functional.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using autograd::SavedTensor;
using detail::backend_of;
using V = std::vector<Tensor>;

namespace {

void check_channel_tensor(const Tensor& x, const Tensor& t, const char* name) {
  if (!t.defined()) return;
  CK_CHECK(t.device() == x.device(), "batch_norm: ", name, " is on ", t.device(), " but the input is on ",
           x.device());
  CK_CHECK(t.dtype() == x.dtype(), "batch_norm: ", name, " is ", t.dtype(), " but the input is ", x.dtype());
  CK_CHECK(t.dim() == 1 && t.size(0) == x.size(1), "batch_norm: ", name, " must have shape [", x.size(1),
           "] for an input of shape ", x.shape(), ", got ", t.shape());
}

Tensor channel_tensor(const Tensor& x) { return detail::new_empty({x.size(1)}, x); }

// batch_norm, and with `relu` relu(batch_norm(...)) in the same pass over x,
// whose backward masks the gradient as relu's does before batch norm's.
Tensor batch_norm_impl(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps,
                       bool relu) {
  const detail::OpScope op_scope(relu ? "batch_norm_relu" : "batch_norm");
  detail::check_floating("batch_norm", x);
  CK_CHECK(x.dim() >= 2, "batch_norm: expected an input of shape [N, C] or [N, C, H, W], got ", x.shape());
  check_channel_tensor(x, running_mean, "running_mean");
  check_channel_tensor(x, running_var, "running_var");
  check_channel_tensor(x, weight, "weight");
  check_channel_tensor(x, bias, "bias");
  CK_CHECK(running_mean.defined() == running_var.defined(),
           "batch_norm: running_mean and running_var must both be given or both be undefined");
  CK_CHECK(training || running_mean.defined(),
           "batch_norm: eval mode normalises with running_mean and running_var, but none were given");
  CK_CHECK(eps >= 0 && std::isfinite(eps), "batch_norm: eps must be a non-negative number, got ", eps);
  CK_CHECK(momentum >= 0 && momentum <= 1, "batch_norm: momentum must be in [0, 1], got ", momentum);
  const std::int64_t C = x.size(1);
  const std::int64_t M = C == 0 ? 0 : x.numel() / C;  // values per channel
  CK_CHECK(!training || M > 1, "batch_norm: training needs more than 1 value per channel, got input of shape ",
           x.shape());

  Backend& be = backend_of(x);
  const Tensor xc = x.detach().contiguous();
  Tensor mean, invstd;
  {
    NoGradGuard no_grad;
    if (training) {
      mean = channel_tensor(x);
      Tensor var = channel_tensor(x);
      be.batch_norm_stats(xc, mean, var);
      invstd = 1.0 / sqrt(add_scalar(var, eps));
      if (running_mean.defined()) {
        const double unbiased = static_cast<double>(M) / static_cast<double>(M - 1);
        Tensor rm = running_mean, rv = running_var;  // handles onto the caller's buffers
        rm.mul_(1 - momentum).add_(mean, momentum);
        rv.mul_(1 - momentum).add_(var, momentum * unbiased);
      }
    } else {
      // Copies, so that a later update of the running stats cannot change this node's backward.
      mean = running_mean.contiguous().clone();
      invstd = 1.0 / sqrt(add_scalar(running_var, eps));
    }
  }
  const Tensor w = weight.defined() ? weight.detach().contiguous() : ones({C}, TensorOptions().dtype(x.dtype()).device(x.device()));
  Tensor scale, shift;
  {
    NoGradGuard no_grad;
    scale = mul(w, invstd);
    shift = neg(mul(mean, scale));
    if (bias.defined()) shift = add(shift, bias.detach());
  }
  Tensor out = detail::new_empty(x.shape(), x);
  if (out.numel() > 0) be.batch_norm_affine(xc, scale, shift, relu, out);

  const bool need_x = x.requires_grad(), need_w = weight.defined() && weight.requires_grad(),
             need_b = bias.defined() && bias.requires_grad();
  return record(out, relu ? "BatchNormReluBackward" : "BatchNormBackward", {x, weight, bias},
                [sx = SavedTensor(xc), sw = SavedTensor(w), sy = relu ? SavedTensor(out.detach()) : SavedTensor(),
                 mean, invstd, scale, training, need_x, need_w, need_b](const Tensor& g_out) {
                  const Tensor& xs = sx.get();
                  const Tensor g = sy.defined() ? detail::relu_backward(g_out, sy.get()) : g_out;
                  const Tensor gc = g.contiguous();
                  Backend& b = backend_of(gc);
                  const Tensor sum_dy = channel_tensor(xs), sum_dy_xmu = channel_tensor(xs);
                  if (xs.numel() > 0) {
                    b.batch_norm_backward_reduce(gc, xs, mean, sum_dy, sum_dy_xmu);
                  } else {
                    b.fill(sum_dy, 0);
                    b.fill(sum_dy_xmu, 0);
                  }
                  Tensor gx;
                  if (need_x) {
                    gx = detail::new_empty(xs.shape(), xs);
                    if (xs.numel() > 0 && training) {
                      b.batch_norm_backward_input(gc, xs, mean, invstd, sw.get(), sum_dy, sum_dy_xmu, gx);
                    } else if (xs.numel() > 0) {
                      // Eval: the statistics are constants, so dx = dy * weight * invstd.
                      b.batch_norm_affine(gc, scale, zeros_like(scale), /*relu=*/false, gx);
                    }
                  }
                  return V{gx, need_w ? mul(sum_dy_xmu, invstd) : Tensor(), need_b ? sum_dy : Tensor()};
                });
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  return batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps, /*relu=*/false);
}

Tensor batch_norm_relu(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, bool training, double momentum, double eps) {
  return batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps, /*relu=*/true);
}

}  // namespace convkit
