#pragma once
// The GPU backend, written once and compiled twice: by nvcc into
// convkit::gpu_cuda (the cuda backend) and by g++ into convkit::gpu_sim (the
// sim backend, which runs the same kernels on the CPU emulator). Each method
// checks nothing the ops layer has checked already; it turns tensors into
// kernel arguments (pointers, StridedViews, sizes) and calls the launchers in
// kernels/*.cuh. One source file per kernel family, named in the sections below.
#include "convkit/backend/backend.h"
#include "convkit/sim/cuda_compat.h"
#include "kernels/tensor_view.cuh"

namespace convkit::CK_GPU_NS {

class GpuBackend final : public Backend {
 public:
  DeviceType type() const override;
  std::vector<BackendInfo> devices() const override;

  // ---- memory and device
  void* allocate(std::size_t nbytes) override;
  void deallocate(void* ptr, std::size_t nbytes) override;
  void copy_from_host(void* dst, const void* src, std::size_t nbytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t nbytes) override;
  void synchronize() override;
  // Every op, on sim and cuda alike (tests/backend/test_registry.cpp lists
  // the fallbacks of each backend).
  bool supports(BackendOp) const override { return true; }

  // ---- elementwise and factories: src/gpu/gpu_elementwise.cpp
  void fill(const Tensor& out, double value) override;
  void unary(UnaryOp op, const Tensor& x, const Tensor& out, double a, double b) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void arange(const Tensor& out, double start, double step) override;
  void uniform(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double lo, double hi) override;
  void normal(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double mean, double std) override;

  // ---- reductions: src/gpu/gpu_reduce.cpp
  void reduce(ReduceOp op, const Tensor& x, const Tensor& out) override;
  void argmax(const Tensor& x, std::int64_t dim, const Tensor& out) override;

  // ---- matrix product: src/gpu/gpu_matmul.cpp
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override;

  // ---- layer kernels: src/gpu/gpu_layers.cpp
  void max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& argmax, PoolWindow window) override;
  void max_pool2d_backward(const Tensor& grad_out, const Tensor& argmax, const Tensor& grad_in, PoolWindow window) override;
  void avg_pool2d_forward(const Tensor& x, const Tensor& out, PoolWindow window) override;
  void avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_in, PoolWindow window) override;
  void batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) override;
  void batch_norm_coefficients(const Tensor& mean, const Tensor& var, const Tensor& weight, const Tensor& bias,
                               const Tensor& running_mean, const Tensor& running_var, BatchNormCoefficientStep step,
                               const Tensor& invstd, const Tensor& scale, const Tensor& shift) override;
  void batch_norm_affine(const Tensor& x, const Tensor& scale, const Tensor& shift, bool relu, const Tensor& out) override;
  void batch_norm_backward_reduce(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& sum_dy, const Tensor& sum_dy_xmu) override;
  void batch_norm_backward_input(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight, const Tensor& sum_dy, const Tensor& sum_dy_xmu, const Tensor& grad_in) override;
  void batch_norm_add_relu(const Tensor& x, const Tensor& residual, const Tensor& scale, const Tensor& shift, const Tensor& out) override;
  void batch_norm_relu_backward_reduce(const Tensor& grad_out, const Tensor& out, const Tensor& x, const Tensor& mean, const Tensor& grad_masked, const Tensor& sum_dy, const Tensor& sum_dy_xmu) override;
  void dropout_mask(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double p) override;
  void softmax_forward(const Tensor& x, std::int64_t dim, bool log, const Tensor& out) override;
  void softmax_backward(const Tensor& grad_out, const Tensor& out, std::int64_t dim, bool log, const Tensor& grad_in) override;
  void cross_entropy_forward(const Tensor& logits, const Tensor& targets, double label_smoothing, const Tensor& loss, const Tensor& lse) override;
  void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& grad_loss, double label_smoothing, const Tensor& grad_logits) override;

  // ---- optimizer updates: src/gpu/gpu_optimizer.cpp
  void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, SgdStep step) override;
  void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq, AdamStep step) override;
  void sgd_update_many(const std::vector<SgdTensors>& tensors, SgdStep step) override;
  void adam_update_many(const std::vector<AdamTensors>& tensors, AdamStep step) override;

  // ---- collectives between ranks' devices: src/gpu/gpu_communicator.cpp
  // (NCCL in the cuda plugin, the thread-rank emulation on sim)
  CommunicatorSupport communicator_support() const override;
  CommunicatorId make_communicator_id() override;
  std::unique_ptr<DeviceCommunicator> make_communicator(const CommunicatorId& id, int rank, int size, Device device,
                                                        double timeout_seconds) override;

  // ---- convolution: src/gpu/gpu_conv.cpp
  Support conv2d_supports(ConvAlgo algo, const Conv2dDesc& desc) override;
  std::size_t conv2d_workspace_bytes(ConvAlgo algo, const Conv2dDesc& desc, DType dtype, ConvPass pass) override;
  ConvAlgo conv2d_heuristic(const Conv2dDesc& desc, DType dtype) override;
  KernelChoices conv2d_kernel_choices(ConvAlgo algo, const Conv2dDesc& desc, DType dtype) override;
  void conv2d_forward(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Tensor& workspace) override;
  void conv2d_backward_data(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& dy, const Tensor& w, const Tensor& dx, const Tensor& workspace) override;
  void conv2d_backward_weights(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x, const Tensor& dy, const Tensor& dw, const Tensor& db, const Tensor& workspace) override;
};

// The kernel-side view of a tensor's layout.
StridedView strided_view(const Tensor& t);

// The backend instance, created on first use (registered by src/backend/registry.cpp).
Backend* make_backend();

}  // namespace convkit::CK_GPU_NS
