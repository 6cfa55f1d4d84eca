// GpuBackend's convolution methods: pick the algorithm, let it run.
#include "gpu/gpu_backend.h"
#include "gpu/gpu_conv_algorithm.h"

namespace convkit::CK_GPU_NS {

namespace {

const GpuConvAlgorithm* find(ConvAlgo algo) {
  switch (algo) {
    case ConvAlgo::direct: return &direct_gpu_conv_algorithm();
    case ConvAlgo::im2col_gemm: return &im2col_gemm_gpu_conv_algorithm();
    case ConvAlgo::fft: return &fft_gpu_conv_algorithm();
    case ConvAlgo::automatic:
    case ConvAlgo::winograd: break;
  }
  return nullptr;
}

const GpuConvAlgorithm& get(ConvAlgo algo) {
  const GpuConvAlgorithm* a = find(algo);
  CK_CHECK(a != nullptr, "conv2d: algorithm ", conv_algo_name(algo), " has no GPU implementation");
  return *a;
}

}  // namespace

Support GpuBackend::conv2d_supports(ConvAlgo algo, const Conv2dDesc& desc) {
  if (algo == ConvAlgo::automatic) return Support::no("automatic is resolved before reaching a backend");
  const GpuConvAlgorithm* a = find(algo);
  if (!a) return Support::no(std::string(conv_algo_name(algo)) + " is not implemented on the GPU yet");
  return a->supports(desc);
}

std::size_t GpuBackend::conv2d_workspace_bytes(ConvAlgo algo, const Conv2dDesc& desc, DType dtype,
                                               ConvPass pass) {
  return get(algo).workspace_bytes(desc, dtype, pass);
}

void GpuBackend::conv2d_forward(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x, const Tensor& w,
                                const Tensor& b, const Tensor& y, const Tensor& workspace) {
  get(algo).forward(desc, x, w, b, y, workspace);
}

void GpuBackend::conv2d_backward_data(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& dy,
                                      const Tensor& w, const Tensor& dx, const Tensor& workspace) {
  get(algo).backward_data(desc, dy, w, dx, workspace);
}

void GpuBackend::conv2d_backward_weights(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                                         const Tensor& dy, const Tensor& dw, const Tensor& db,
                                         const Tensor& workspace) {
  get(algo).backward_weights(desc, x, dy, dw, db, workspace);
}

}  // namespace convkit::CK_GPU_NS
