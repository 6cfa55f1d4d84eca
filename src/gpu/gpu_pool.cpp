// GpuBackend's pooling methods: kernels/pooling.cu. The ops layer hands over
// contiguous NCHW tensors, so a plane is H * W consecutive elements.
#include "gpu/gpu_backend.h"
#include "kernels/pooling.cuh"

namespace convkit::CK_GPU_NS {

namespace {
PoolShape pool_shape(const Tensor& input, const Tensor& output) {
  return {input.size(0) * input.size(1), input.size(2), input.size(3), output.size(2), output.size(3)};
}
}  // namespace

void GpuBackend::max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& argmax, PoolWindow window) {
  launch_max_pool2d_forward(x.dtype(), x.raw_data(), out.raw_data(), argmax.data<std::int64_t>(), pool_shape(x, out),
                            window);
}

void GpuBackend::max_pool2d_backward(const Tensor& grad_out, const Tensor& argmax, const Tensor& grad_in,
                                     PoolWindow window) {
  launch_max_pool2d_backward(grad_out.dtype(), grad_out.raw_data(), argmax.data<std::int64_t>(), grad_in.raw_data(),
                             pool_shape(grad_in, grad_out), window);
}

void GpuBackend::avg_pool2d_forward(const Tensor& x, const Tensor& out, PoolWindow window) {
  launch_avg_pool2d_forward(x.dtype(), x.raw_data(), out.raw_data(), pool_shape(x, out), window);
}

void GpuBackend::avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_in, PoolWindow window) {
  launch_avg_pool2d_backward(grad_out.dtype(), grad_out.raw_data(), grad_in.raw_data(), pool_shape(grad_in, grad_out),
                             window);
}

}  // namespace convkit::CK_GPU_NS
