// The cpu backend's convolution entry points: the shared adapter from
// tensors to the raw-buffer algorithms in src/cpu/conv/.
#include "conv/conv_dispatch.h"
#include "cpu/conv/conv_algorithm.h"
#include "cpu/conv/conv_heuristic.h"
#include "cpu/cpu_backend.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

Support CpuBackend::conv2d_supports(ConvAlgo algo, const Conv2dDesc& desc) {
  return conv::dispatch_supports(conv_registry(), algo, desc);
}

std::size_t CpuBackend::conv2d_workspace_bytes(ConvAlgo algo, const Conv2dDesc& desc, DType dtype,
                                               ConvPass pass) {
  return conv::dispatch_workspace_bytes(conv_registry(), algo, desc, dtype, pass);
}

ConvAlgo CpuBackend::conv2d_heuristic(const Conv2dDesc& desc, DType dtype) {
  return choose_conv_algorithm_heuristic(desc, dtype);
}

void CpuBackend::conv2d_forward(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                                const Tensor& w, const Tensor& b, const Tensor& y,
                                const Tensor& workspace) {
  conv::dispatch_forward(conv_registry(), algo, desc, x, w, b, y, workspace);
}

void CpuBackend::conv2d_backward_data(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& dy,
                                      const Tensor& w, const Tensor& dx, const Tensor& workspace) {
  conv::dispatch_backward_data(conv_registry(), algo, desc, dy, w, dx, workspace);
}

void CpuBackend::conv2d_backward_weights(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                                         const Tensor& dy, const Tensor& dw, const Tensor& db,
                                         const Tensor& workspace) {
  conv::dispatch_backward_weights(conv_registry(), algo, desc, x, dy, dw, db, workspace);
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
