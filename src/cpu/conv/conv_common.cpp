// Argument checks and the bias gradient shared by every CPU convolution algorithm.
#include "cpu/conv/conv_common.h"

#include <string>
#include <vector>

namespace convkit::cpu {

std::string conv_op_name(ConvAlgo algo, ConvPass pass) {
  return conv::conv_op_name("cpu", algo, pass);
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

// Each thread takes a block of channels and walks the images in memory
// order, summing its channels' planes of each image (contiguous) into one
// total per channel. Channel-major, a thread read one plane per image 64-115
// KB apart, too short a stream for the prefetchers. Each total still adds
// the images' plane sums in image order, so db does not depend on the
// thread count.
template <typename T>
void bias_gradient(const Conv2dDesc& d, const T* dy, T* db) {
  const std::int64_t N = d.N, K = d.K, plane = d.P() * d.Q();
#pragma omp parallel if (worth_parallelising(d))
  {
    const std::int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t k0 = K * t / threads, k1 = K * (t + 1) / threads;
    std::vector<double> totals(static_cast<std::size_t>(k1 - k0), 0.0);
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t k = k0; k < k1; ++k)
        totals[static_cast<std::size_t>(k - k0)] += sum_in_double(dy + (n * K + k) * plane, plane);
    for (std::int64_t k = k0; k < k1; ++k) db[k] = static_cast<T>(totals[static_cast<std::size_t>(k - k0)]);
  }
}

template void bias_gradient<float>(const Conv2dDesc&, const float*, float*);
template void bias_gradient<double>(const Conv2dDesc&, const double*, double*);

}  // namespace convkit::cpu
