#pragma once
// Argument checks shared by the fused optimizer updates (fused_sgd_update,
// fused_adam_update): the backend kernels take contiguous tensors of one
// shape, dtype and device, and do no checking of their own.
#include "convkit/autograd/grad_mode.h"
#include "convkit/core/tensor.h"

namespace convkit::optim::detail {

// param and grad: defined, floating, alike; param may be written in place.
inline void check_param_and_grad(const char* op, const Tensor& param, const Tensor& grad) {
  CK_CHECK(param.defined() && grad.defined(), op, ": the parameter and its gradient must be defined");
  CK_CHECK(is_floating(param.dtype()), op, ": the parameter must be float32 or float64, got ",
           param.dtype(), " of shape ", param.shape());
  CK_CHECK(grad.shape() == param.shape() && grad.dtype() == param.dtype() && grad.device() == param.device(),
           op, ": the gradient (", grad.shape(), ", ", grad.dtype(), ", ", grad.device(),
           ") does not match its parameter (", param.shape(), ", ", param.dtype(), ", ", param.device(), ")");
  CK_CHECK(!autograd::grad_enabled() || !param.requires_grad(), op, ": the parameter of shape ", param.shape(),
           " requires grad; update it under NoGradGuard (Optimizer::step does)");
}

// A state buffer handed in by the caller: alike to param, and made contiguous
// (in its slot) when it is not, since the kernels index it linearly.
inline void prepare_buffer(const char* op, const char* name, const Tensor& param, Tensor& buffer) {
  CK_CHECK(buffer.shape() == param.shape() && buffer.dtype() == param.dtype() &&
               buffer.device() == param.device(),
           op, ": the ", name, " (", buffer.shape(), ", ", buffer.dtype(), ", ", buffer.device(),
           ") does not match its parameter (", param.shape(), ", ", param.dtype(), ", ", param.device(), ")");
  if (!buffer.is_contiguous()) buffer = buffer.contiguous();
}

}  // namespace convkit::optim::detail
