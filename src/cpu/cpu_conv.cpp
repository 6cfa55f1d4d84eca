// The cpu backend's convolution entry points: thin adapters from tensors to
// the raw-buffer algorithms in src/cpu/conv/.
#include "cpu/conv/conv_algorithm.h"
#include "cpu/conv/conv_heuristic.h"
#include "cpu/cpu_backend.h"

namespace convkit::cpu {

namespace {
const void* ptr_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }
void* mut_ptr_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }
}  // namespace

Support CpuBackend::conv2d_supports(ConvAlgo algo, const Conv2dDesc& desc) {
  if (algo == ConvAlgo::automatic) return Support::no("automatic is resolved before reaching a backend");
  return conv_algorithm(algo).supports(desc);
}

std::size_t CpuBackend::conv2d_workspace_bytes(ConvAlgo algo, const Conv2dDesc& desc, DType dtype,
                                               ConvPass pass) {
  return conv_algorithm(algo).workspace_bytes(desc, dtype, pass);
}

ConvAlgo CpuBackend::conv2d_heuristic(const Conv2dDesc& desc, DType dtype) {
  return choose_conv_algorithm_heuristic(desc, dtype);
}

void CpuBackend::conv2d_forward(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                                const Tensor& w, const Tensor& b, const Tensor& y,
                                const Tensor& workspace) {
  conv_algorithm(algo).forward(desc, x.dtype(), x.raw_data(), w.raw_data(), ptr_or_null(b),
                               y.raw_data(), mut_ptr_or_null(workspace));
}

void CpuBackend::conv2d_backward_data(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& dy,
                                      const Tensor& w, const Tensor& dx, const Tensor& workspace) {
  conv_algorithm(algo).backward_data(desc, dy.dtype(), dy.raw_data(), w.raw_data(), dx.raw_data(),
                                     mut_ptr_or_null(workspace));
}

void CpuBackend::conv2d_backward_weights(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                                         const Tensor& dy, const Tensor& dw, const Tensor& db,
                                         const Tensor& workspace) {
  conv_algorithm(algo).backward_weights(desc, x.dtype(), x.raw_data(), dy.raw_data(), dw.raw_data(),
                                        mut_ptr_or_null(db), mut_ptr_or_null(workspace));
}

}  // namespace convkit::cpu
