// GpuBackend's softmax, log-softmax and fused cross-entropy: kernels/softmax.cu.
#include "gpu/gpu_backend.h"
#include "gpu/target_check.h"
#include "kernels/softmax.cuh"

namespace convkit::CK_GPU_NS {

namespace {

// x viewed as [outer, x.size(dim), inner].
struct RowView {
  std::int64_t outer = 1, n = 1, inner = 1;
  RowView(const Tensor& x, std::int64_t dim) {
    CK_CHECK(dim >= 0 && dim < x.dim(), "softmax: dim ", dim, " out of range for shape ", x.shape());
    for (std::int64_t d = 0; d < dim; ++d) outer *= x.size(d);
    n = x.size(dim);
    for (std::int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  }
};

void check_contiguous(const char* op, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    CK_CHECK(t->is_contiguous(), op, ": the GPU kernel takes contiguous tensors, got shape ", t->shape(),
             " with strides ", Shape(t->strides()));
}

}  // namespace

void GpuBackend::softmax_forward(const Tensor& x, std::int64_t dim, bool log, const Tensor& out) {
  check_contiguous("softmax", {&x, &out});
  const RowView v(x, dim);
  launch_softmax_forward(x.dtype(), x.raw_data(), out.raw_data(), v.outer, v.n, v.inner, log,
                         softmax_kernel_version());
}

void GpuBackend::softmax_backward(const Tensor& grad_out, const Tensor& out, std::int64_t dim, bool log,
                                  const Tensor& grad_in) {
  check_contiguous("softmax_backward", {&grad_out, &out, &grad_in});
  const RowView v(out, dim);
  launch_softmax_backward(out.dtype(), grad_out.raw_data(), out.raw_data(), grad_in.raw_data(), v.outer, v.n,
                          v.inner, log, softmax_kernel_version());
}

void GpuBackend::cross_entropy_forward(const Tensor& logits, const Tensor& targets, double label_smoothing,
                                       const Tensor& loss, const Tensor& lse) {
  check_contiguous("cross_entropy", {&logits, &targets, &loss, &lse});
  CK_CHECK(logits.dim() == 2, "cross_entropy: logits must be [N, C], got ", logits.shape());
  launch_cross_entropy_forward(logits.dtype(), logits.raw_data(), targets.data<std::int64_t>(), logits.size(0),
                               logits.size(1), label_smoothing, loss.raw_data(), lse.raw_data(),
                               softmax_kernel_version(), bad_target_record());
}

void GpuBackend::cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                        const Tensor& grad_loss, double label_smoothing,
                                        const Tensor& grad_logits) {
  check_contiguous("cross_entropy_backward", {&logits, &targets, &lse, &grad_loss, &grad_logits});
  CK_CHECK(logits.dim() == 2, "cross_entropy_backward: logits must be [N, C], got ", logits.shape());
  launch_cross_entropy_backward(logits.dtype(), logits.raw_data(), targets.data<std::int64_t>(), lse.raw_data(),
                                grad_loss.raw_data(), logits.size(0), logits.size(1), label_smoothing,
                                grad_logits.raw_data());
}

}  // namespace convkit::CK_GPU_NS
