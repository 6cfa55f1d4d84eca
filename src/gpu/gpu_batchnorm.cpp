// GpuBackend's batch-norm kernels: kernels/batchnorm.cu. x is viewed as
// [N, C, S]; split reductions get their workspace here.
#include "gpu/gpu_backend.h"
#include "kernels/batchnorm.cuh"

namespace convkit::CK_GPU_NS {

namespace {

struct ChannelView {
  std::int64_t N, C, S;
  ChannelView(const char* op, const Tensor& x) : N(0), C(0), S(0) {
    CK_CHECK(x.dim() >= 2 && x.is_contiguous(), op, ": x must be contiguous [N, C, ...], got shape ", x.shape());
    N = x.size(0);
    C = x.size(1);
    S = N * C == 0 ? 0 : x.numel() / (N * C);
  }
};

Tensor workspace_for(const BatchNormPlan& plan, const Tensor& x) {
  if (plan.workspace_elements == 0) return {};
  return Tensor::empty({plan.workspace_elements}, TensorOptions().dtype(x.dtype()).device(x.device()));
}

void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

}  // namespace

void GpuBackend::batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) {
  const ChannelView v("batch_norm_stats", x);
  const BatchNormPlan plan = plan_batch_norm(v.N, v.C, v.S, batch_norm_kernel_version());
  const Tensor workspace = workspace_for(plan, x);
  launch_batch_norm_stats(x.dtype(), x.raw_data(), v.N, v.C, v.S, mean.raw_data(), var.raw_data(), plan,
                          data_or_null(workspace));
}

void GpuBackend::batch_norm_coefficients(const Tensor& mean, const Tensor& var, const Tensor& weight,
                                         const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                                         BatchNormCoefficientStep step, const Tensor& invstd, const Tensor& scale,
                                         const Tensor& shift) {
  launch_batch_norm_coefficients(mean.dtype(), mean.numel(), mean.raw_data(), var.raw_data(), weight.raw_data(),
                                 data_or_null(bias), data_or_null(running_mean), data_or_null(running_var), step,
                                 invstd.raw_data(), scale.raw_data(), shift.raw_data());
}

void GpuBackend::batch_norm_affine(const Tensor& x, const Tensor& scale, const Tensor& shift, bool relu,
                                   const Tensor& out) {
  const ChannelView v("batch_norm_affine", x);
  launch_batch_norm_affine(x.dtype(), x.raw_data(), scale.raw_data(), shift.raw_data(), v.N, v.C, v.S, relu,
                           out.raw_data(), batch_norm_kernel_version());
}

void GpuBackend::batch_norm_backward_reduce(const Tensor& grad_out, const Tensor& x, const Tensor& mean,
                                            const Tensor& sum_dy, const Tensor& sum_dy_xmu) {
  const ChannelView v("batch_norm_backward_reduce", x);
  CK_CHECK(grad_out.is_contiguous(), "batch_norm_backward_reduce: grad_out must be contiguous");
  const BatchNormPlan plan = plan_batch_norm(v.N, v.C, v.S, batch_norm_kernel_version());
  const Tensor workspace = workspace_for(plan, x);
  launch_batch_norm_backward_reduce(x.dtype(), grad_out.raw_data(), x.raw_data(), mean.raw_data(), v.N, v.C, v.S,
                                    sum_dy.raw_data(), sum_dy_xmu.raw_data(), plan, data_or_null(workspace));
}

void GpuBackend::batch_norm_backward_input(const Tensor& grad_out, const Tensor& x, const Tensor& mean,
                                           const Tensor& invstd, const Tensor& weight, const Tensor& sum_dy,
                                           const Tensor& sum_dy_xmu, const Tensor& grad_in) {
  const ChannelView v("batch_norm_backward_input", x);
  CK_CHECK(grad_out.is_contiguous(), "batch_norm_backward_input: grad_out must be contiguous");
  launch_batch_norm_backward_input(x.dtype(), grad_out.raw_data(), x.raw_data(), mean.raw_data(), invstd.raw_data(),
                                   weight.raw_data(), sum_dy.raw_data(), sum_dy_xmu.raw_data(), v.N, v.C, v.S,
                                   grad_in.raw_data(), batch_norm_kernel_version());
}

void GpuBackend::batch_norm_add_relu(const Tensor& x, const Tensor& residual, const Tensor& scale,
                                     const Tensor& shift, const Tensor& out) {
  const ChannelView v("batch_norm_add_relu", x);
  CK_CHECK(residual.is_contiguous() && residual.shape() == x.shape(),
           "batch_norm_add_relu: the residual must be contiguous of shape ", x.shape(), ", got ", residual.shape());
  launch_batch_norm_add_relu(x.dtype(), x.raw_data(), residual.raw_data(), scale.raw_data(), shift.raw_data(), v.N,
                             v.C, v.S, out.raw_data(), batch_norm_kernel_version());
}

void GpuBackend::batch_norm_relu_backward_reduce(const Tensor& grad_out, const Tensor& out, const Tensor& x,
                                                 const Tensor& mean, const Tensor& grad_masked,
                                                 const Tensor& sum_dy, const Tensor& sum_dy_xmu) {
  const ChannelView v("batch_norm_relu_backward_reduce", x);
  CK_CHECK(grad_out.is_contiguous() && out.is_contiguous() && grad_masked.is_contiguous(),
           "batch_norm_relu_backward_reduce: grad_out, out and grad_masked must be contiguous");
  const BatchNormPlan plan = plan_batch_norm(v.N, v.C, v.S, batch_norm_kernel_version());
  const Tensor workspace = workspace_for(plan, x);
  launch_batch_norm_relu_backward_reduce(x.dtype(), grad_out.raw_data(), out.raw_data(), x.raw_data(),
                                         mean.raw_data(), v.N, v.C, v.S, grad_masked.raw_data(), sum_dy.raw_data(),
                                         sum_dy_xmu.raw_data(), plan, data_or_null(workspace));
}

}  // namespace convkit::CK_GPU_NS
