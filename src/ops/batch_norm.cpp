// Batch normalisation. The forward folds mean, 1/std, weight and bias into one
// per-channel scale and shift (one backend call, which also updates the
// running statistics), so the backend makes a single pass over x; the
// backward is the closed-form one (two passes: per-channel sums, then the
// input gradient), not a chain of elementwise ops. A following ReLU, and a
// residual added before it, ride in the same passes: forward in the affine
// map, backward in the reduction, which masks the gradient as it sums it.
#include <cmath>
#include <utility>
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

// batch_norm; with `relu` relu(batch_norm(...)), and with a residual too
// relu(batch_norm(...) + residual), in the same pass over x. The backward
// masks the gradient by the saved output in the pass that takes batch norm's
// sums; the masked gradient is the residual's and feeds the input gradient.
Tensor batch_norm_impl(const Tensor& x, const Tensor& residual, const Tensor& running_mean,
                       const Tensor& running_var, const Tensor& weight, const Tensor& bias, bool training,
                       double momentum, double eps, bool relu) {
  const bool has_residual = residual.defined();
  const char* name = has_residual ? "batch_norm_add_relu" : relu ? "batch_norm_relu" : "batch_norm";
  const detail::OpScope op_scope(name);
  detail::check_floating("batch_norm", x);
  CK_CHECK(x.dim() >= 2, "batch_norm: expected an input of shape [N, C] or [N, C, H, W], got ", x.shape());
  if (has_residual) {
    CK_CHECK(residual.device() == x.device(), name, ": the residual is on ", residual.device(),
             " but the input is on ", x.device());
    CK_CHECK(residual.dtype() == x.dtype(), name, ": the residual is ", residual.dtype(), " but the input is ",
             x.dtype());
    CK_CHECK(residual.shape() == x.shape(), name, ": the residual must have the input's shape ", x.shape(),
             ", got ", residual.shape());
  }
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
  const Tensor w = weight.defined() ? weight.detach().contiguous() : ones({C}, TensorOptions().dtype(x.dtype()).device(x.device()));
  Tensor mean;
  const Tensor invstd = channel_tensor(x), scale = channel_tensor(x), shift = channel_tensor(x);
  {
    NoGradGuard no_grad;
    const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
    if (training) {
      mean = channel_tensor(x);
      const Tensor var = channel_tensor(x);
      // M > 1 here; the running variance is the unbiased one.
      const BatchNormCoefficientStep step{eps, momentum, static_cast<double>(M) / static_cast<double>(M - 1)};
      be.batch_norm_stats(xc, mean, var);
      // The running statistics are the caller's buffers, updated in place
      // (through contiguous copies where they are strided views).
      Tensor rm = running_mean.defined() ? running_mean.contiguous() : Tensor();
      Tensor rv = running_var.defined() ? running_var.contiguous() : Tensor();
      be.batch_norm_coefficients(mean, var, w, b, rm, rv, step, invstd, scale, shift);
      for (auto [buffer, updated] : {std::pair{running_mean, rm}, std::pair{running_var, rv}}) {
        if (!buffer.defined()) continue;
        if (updated.storage() == buffer.storage()) {
          buffer.storage()->bump_version();
        } else {
          buffer.copy_(updated);
        }
      }
    } else {
      // A copy, so that a later update of the running stats cannot change this node's backward.
      mean = running_mean.contiguous().clone();
      be.batch_norm_coefficients(mean, running_var.contiguous(), w, b, Tensor(), Tensor(),
                                 BatchNormCoefficientStep{eps, 0.0, 1.0}, invstd, scale, shift);
    }
  }
  Tensor out = detail::new_empty(x.shape(), x);
  if (out.numel() > 0 && has_residual) {
    be.batch_norm_add_relu(xc, residual.detach().contiguous(), scale, shift, out);
  } else if (out.numel() > 0) {
    be.batch_norm_affine(xc, scale, shift, relu, out);
  }

  const bool need_x = x.requires_grad(), need_w = weight.defined() && weight.requires_grad(),
             need_b = bias.defined() && bias.requires_grad();
  auto backward = [sx = SavedTensor(xc), sw = SavedTensor(w),
                   sy = relu || has_residual ? SavedTensor(out.detach()) : SavedTensor(), mean, invstd, scale,
                   training, has_residual, need_x, need_w, need_b](const Tensor& g_out) {
    const Tensor& xs = sx.get();
    const bool reuse = autograd::exclusively_owned(g_out);  // overwritten in place, as relu's backward does
    Tensor g = g_out.contiguous();  // batch norm's output gradient, masked by the ReLU when there is one
    Backend& b = backend_of(g);
    const Tensor sum_dy = channel_tensor(xs), sum_dy_xmu = channel_tensor(xs);
    if (xs.numel() == 0) {
      b.fill(sum_dy, 0);
      b.fill(sum_dy_xmu, 0);
    } else if (sy.defined()) {
      const Tensor masked = reuse ? g : detail::new_empty(xs.shape(), xs);
      b.batch_norm_relu_backward_reduce(g, sy.get(), xs, mean, masked, sum_dy, sum_dy_xmu);
      g = masked;
    } else {
      b.batch_norm_backward_reduce(g, xs, mean, sum_dy, sum_dy_xmu);
    }
    Tensor gx;
    if (need_x) {
      gx = detail::new_empty(xs.shape(), xs);
      if (xs.numel() > 0 && training) {
        b.batch_norm_backward_input(g, xs, mean, invstd, sw.get(), sum_dy, sum_dy_xmu, gx);
      } else if (xs.numel() > 0) {
        // Eval: the statistics are constants, so dx = dy * weight * invstd.
        b.batch_norm_affine(g, scale, zeros_like(scale), /*relu=*/false, gx);
      }
    }
    const Tensor gw = need_w ? mul(sum_dy_xmu, invstd) : Tensor(), gb = need_b ? sum_dy : Tensor();
    // The residual's gradient is the masked one: d(a + b)/db = 1.
    return has_residual ? V{gx, g, gw, gb} : V{gx, gw, gb};
  };
  const char* node = has_residual ? "BatchNormAddReluBackward" : relu ? "BatchNormReluBackward" : "BatchNormBackward";
  if (has_residual) return record(out, node, {x, residual, weight, bias}, std::move(backward));
  return record(out, node, {x, weight, bias}, std::move(backward));
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  return batch_norm_impl(x, Tensor(), running_mean, running_var, weight, bias, training, momentum, eps,
                         /*relu=*/false);
}

Tensor batch_norm_relu(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, bool training, double momentum, double eps) {
  return batch_norm_impl(x, Tensor(), running_mean, running_var, weight, bias, training, momentum, eps,
                         /*relu=*/true);
}

Tensor batch_norm_add_relu(const Tensor& x, const Tensor& residual, const Tensor& running_mean,
                           const Tensor& running_var, const Tensor& weight, const Tensor& bias, bool training,
                           double momentum, double eps) {
  CK_CHECK(residual.defined(), "batch_norm_add_relu: the residual is undefined");
  return batch_norm_impl(x, residual, running_mean, running_var, weight, bias, training, momentum, eps,
                         /*relu=*/true);
}

}  // namespace convkit
