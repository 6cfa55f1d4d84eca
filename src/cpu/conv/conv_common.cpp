// Argument checks and the bias gradient shared by every CPU convolution algorithm.
#include "cpu/conv/conv_common.h"

#include <string>

namespace convkit::cpu {

std::string conv_op_name(ConvAlgo algo, ConvPass pass) {
  return detail::concat("conv2d ", conv_pass_name(pass), " (cpu, ", conv_algo_name(algo), ")");
}

void check_conv_call(const ConvAlgorithm& algo, const Conv2dDesc& desc, DType dtype, ConvPass pass,
                     std::initializer_list<NamedBuffer> required, const void* workspace) {
  const std::string op = conv_op_name(algo.algo(), pass);
  desc.validate(op.c_str());
  const Support support = algo.supports(desc);
  CK_CHECK(support.ok, op, ": not supported: ", support.reason, "; descriptor: ", desc.str());
  CK_CHECK(dtype == DType::float32 || dtype == DType::float64, op, ": dtype ", dtype,
           " is not supported (float32 and float64 are); descriptor: ", desc.str());
  for (const NamedBuffer& buffer : required) {
    CK_CHECK(buffer.ptr != nullptr, op, ": buffer '", buffer.name, "' is null; descriptor: ", desc.str());
  }
  const std::size_t needed = algo.workspace_bytes(desc, dtype, pass);
  CK_CHECK(needed == 0 || workspace != nullptr, op, ": needs ", needed,
           " bytes of workspace but workspace is null; descriptor: ", desc.str());
}

std::size_t ConvAlgorithm::workspace_bytes(const Conv2dDesc& desc, DType dtype) const {
  return std::max({workspace_bytes(desc, dtype, ConvPass::forward),
                   workspace_bytes(desc, dtype, ConvPass::backward_data),
                   workspace_bytes(desc, dtype, ConvPass::backward_weights)});
}

template <typename T>
void bias_gradient(const Conv2dDesc& d, const T* dy, T* db) {
  const std::int64_t N = d.N, K = d.K, plane = d.P() * d.Q();
#pragma omp parallel for schedule(static) if (worth_parallelising(d))
  for (std::int64_t k = 0; k < K; ++k) {
    double total = 0;
    for (std::int64_t n = 0; n < N; ++n) total += sum_in_double(dy + (n * K + k) * plane, plane);
    db[k] = static_cast<T>(total);
  }
}

template void bias_gradient<float>(const Conv2dDesc&, const float*, float*);
template void bias_gradient<double>(const Conv2dDesc&, const double*, double*);

}  // namespace convkit::cpu
