// GpuBackend's convolution methods: pick the algorithm, let it run.
#include "conv/conv_dispatch.h"
#include "gpu/gpu_backend.h"
#include "gpu/gpu_conv_algorithm.h"

namespace convkit::CK_GPU_NS {

conv::ConvAlgorithmRegistry& conv_registry() {
  static conv::ConvAlgorithmRegistry registry(kConvBackendName);
  return registry;
}

std::string conv_op_name(ConvAlgo algo, ConvPass pass) {
  return conv::conv_op_name(kConvBackendName, algo, pass);
}

namespace {

bool runs(ConvAlgo algo, const Conv2dDesc& desc, DType dtype) { return conv_registry().runs(algo, desc, dtype); }

}  // namespace

// The GPU's choice for ConvAlgo::automatic, first match wins:
//  1. fft for stride 1, dilated filter extents >= 7 in both directions and at
//     least 4096 output positions in the batch (N*P*Q). Its work per output
//     barely grows with the filter (8 * F * C/g flops per tile and channel for
//     the channel sums, versus 2 * R*S * C/g per output for the others), and a
//     tile of 7x7 outputs or more amortises the transforms; enough outputs
//     amortise the K*C/g filter transforms. This is the CPU's rule
//     (src/cpu/conv/conv_heuristic.cpp, measured there) moved up from 5x5 to
//     7x7, because on the GPU im2col_gemm's GEMM runs at a far higher fraction
//     of peak than fft's per-frequency complex GEMMs over short C/g. It is not
//     yet measured on a GPU (docs/gpu/conv2d_fft.md says how to).
//  2. winograd for undilated 3x3 filters at stride 1 with more than 4 input
//     channels per group. Measured on an H200 (docs/gpu/measured-h200.md):
//     on the seven such layers of cifar10-cnn and resnet18-cifar at batch
//     128, its three passes took less time than those of im2col_gemm's
//     version 3 (2.6-7.6x less) and of its version 5 (1.04-3.2x less), and
//     less than cuDNN's best on most. A first layer (3 channels: RGB) is the
//     exception: im2col_gemm's version 5 took 0.39 ms over the three passes
//     of cifar10-cnn's against winograd's 0.48, 0.56 against 0.66 on
//     resnet18-cifar's, because a 3-channel layer gives Winograd's
//     transforms almost no channel sum to amortise them over.
//  3. im2col_gemm otherwise: one large GEMM per chunk.
//  4. direct when none runs (workspace_limit too small, or im2col_gemm not
//     available): it needs no workspace and supports every descriptor.
ConvAlgo GpuBackend::conv2d_heuristic(const Conv2dDesc& desc, DType dtype) {
  desc.validate("conv2d_heuristic (gpu)");
  const std::int64_t extent_h = (desc.R - 1) * desc.dilation_h + 1;
  const std::int64_t extent_w = (desc.S - 1) * desc.dilation_w + 1;
  const bool stride_one = desc.stride_h == 1 && desc.stride_w == 1;
  const bool large_filter = extent_h >= 7 && extent_w >= 7;
  const bool enough_outputs = desc.N * desc.P() * desc.Q() >= 4096;
  if (stride_one && large_filter && enough_outputs && runs(ConvAlgo::fft, desc, dtype)) return ConvAlgo::fft;
  const bool undilated_3x3 = desc.R == 3 && desc.S == 3 && desc.dilation_h == 1 && desc.dilation_w == 1;
  const bool few_channels = desc.C_per_group() <= 4;
  if (stride_one && undilated_3x3 && !few_channels && runs(ConvAlgo::winograd, desc, dtype))
    return ConvAlgo::winograd;
  if (runs(ConvAlgo::im2col_gemm, desc, dtype)) return ConvAlgo::im2col_gemm;
  return ConvAlgo::direct;
}

Support GpuBackend::conv2d_supports(ConvAlgo algo, const Conv2dDesc& desc) {
  return conv::dispatch_supports(conv_registry(), algo, desc);
}

KernelChoices GpuBackend::conv2d_kernel_choices(ConvAlgo algo, const Conv2dDesc& desc, DType dtype) {
  const conv::ConvAlgorithm* a = conv_registry().find(algo);
  return a ? a->kernel_choices(desc, dtype) : KernelChoices{};
}

std::size_t GpuBackend::conv2d_workspace_bytes(ConvAlgo algo, const Conv2dDesc& desc, DType dtype,
                                               ConvPass pass) {
  return conv::dispatch_workspace_bytes(conv_registry(), algo, desc, dtype, pass);
}

void GpuBackend::conv2d_forward(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x, const Tensor& w,
                                const Tensor& b, const Tensor& y, const Tensor& workspace) {
  conv::dispatch_forward(conv_registry(), algo, desc, x, w, b, y, workspace);
}

void GpuBackend::conv2d_backward_data(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& dy,
                                      const Tensor& w, const Tensor& dx, const Tensor& workspace) {
  conv::dispatch_backward_data(conv_registry(), algo, desc, dy, w, dx, workspace);
}

void GpuBackend::conv2d_backward_weights(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                                         const Tensor& dy, const Tensor& dw, const Tensor& db,
                                         const Tensor& workspace) {
  conv::dispatch_backward_weights(conv_registry(), algo, desc, x, dy, dw, db, workspace);
}

}  // namespace convkit::CK_GPU_NS
