#pragma once
// The GPU convolution algorithms, mirroring src/cpu/conv/conv_algorithm.h but
// on device tensors. GpuBackend's conv2d_* methods (gpu_conv.cpp) dispatch to
// one of these; each lives in its own file with its kernels in kernels/.
#include "convkit/backend/backend.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

class GpuConvAlgorithm {
 public:
  virtual ~GpuConvAlgorithm() = default;
  virtual Support supports(const Conv2dDesc& desc) const = 0;
  virtual std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) const = 0;
  // Same contracts as Backend::conv2d_forward / _backward_data / _backward_weights.
  virtual void forward(const Conv2dDesc& desc, const Tensor& x, const Tensor& w, const Tensor& b,
                       const Tensor& y, const Tensor& workspace) const = 0;
  virtual void backward_data(const Conv2dDesc& desc, const Tensor& dy, const Tensor& w,
                             const Tensor& dx, const Tensor& workspace) const = 0;
  virtual void backward_weights(const Conv2dDesc& desc, const Tensor& x, const Tensor& dy,
                                const Tensor& dw, const Tensor& db, const Tensor& workspace) const = 0;
};

const GpuConvAlgorithm& direct_gpu_conv_algorithm();       // gpu_conv_direct.cpp
const GpuConvAlgorithm& im2col_gemm_gpu_conv_algorithm();  // gpu_conv_im2col_gemm.cpp
const GpuConvAlgorithm& fft_gpu_conv_algorithm();          // gpu_conv_fft.cpp

}  // namespace convkit::CK_GPU_NS
