// Methods whose kernel families are being written. Each one moves to its
// family's file (see gpu_backend.h) as its kernels land; the sim backend is
// registered only when this file is gone.
#include "gpu/gpu_backend.h"
#include "gpu/gpu_conv_algorithm.h"

namespace convkit::CK_GPU_NS {

void GpuBackend::reduce(ReduceOp /*op*/, const Tensor& /*x*/, const Tensor& /*out*/) {
  CK_FAIL("reduce: no GPU kernel yet");
}

void GpuBackend::argmax(const Tensor& /*x*/, std::int64_t /*dim*/, const Tensor& /*out*/) {
  CK_FAIL("argmax: no GPU kernel yet");
}

void GpuBackend::batch_norm_stats(const Tensor& /*x*/, const Tensor& /*mean*/, const Tensor& /*var*/) {
  CK_FAIL("batch_norm_stats: no GPU kernel yet");
}

void GpuBackend::batch_norm_affine(const Tensor& /*x*/, const Tensor& /*scale*/, const Tensor& /*shift*/, const Tensor& /*out*/) {
  CK_FAIL("batch_norm_affine: no GPU kernel yet");
}

void GpuBackend::batch_norm_backward_reduce(const Tensor& /*grad_out*/, const Tensor& /*x*/, const Tensor& /*mean*/, const Tensor& /*sum_dy*/, const Tensor& /*sum_dy_xmu*/) {
  CK_FAIL("batch_norm_backward_reduce: no GPU kernel yet");
}

void GpuBackend::batch_norm_backward_input(const Tensor& /*grad_out*/, const Tensor& /*x*/, const Tensor& /*mean*/, const Tensor& /*invstd*/, const Tensor& /*weight*/, const Tensor& /*sum_dy*/, const Tensor& /*sum_dy_xmu*/, const Tensor& /*grad_in*/) {
  CK_FAIL("batch_norm_backward_input: no GPU kernel yet");
}

void GpuBackend::softmax_forward(const Tensor& /*x*/, std::int64_t /*dim*/, bool /*log*/, const Tensor& /*out*/) {
  CK_FAIL("softmax_forward: no GPU kernel yet");
}

void GpuBackend::softmax_backward(const Tensor& /*grad_out*/, const Tensor& /*out*/, std::int64_t /*dim*/, bool /*log*/, const Tensor& /*grad_in*/) {
  CK_FAIL("softmax_backward: no GPU kernel yet");
}

void GpuBackend::cross_entropy_forward(const Tensor& /*logits*/, const Tensor& /*targets*/, double /*label_smoothing*/, const Tensor& /*loss*/, const Tensor& /*lse*/) {
  CK_FAIL("cross_entropy_forward: no GPU kernel yet");
}

void GpuBackend::cross_entropy_backward(const Tensor& /*logits*/, const Tensor& /*targets*/, const Tensor& /*lse*/, const Tensor& /*grad_loss*/, double /*label_smoothing*/, const Tensor& /*grad_logits*/) {
  CK_FAIL("cross_entropy_backward: no GPU kernel yet");
}







// Algorithms of gpu_conv_algorithm.h not written yet.

}  // namespace convkit::CK_GPU_NS
