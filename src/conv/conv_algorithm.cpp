// The per-backend registry of convolution algorithms.
#include "conv/conv_algorithm.h"

#include <algorithm>

#include "convkit/core/error.h"

namespace convkit::conv {

std::size_t ConvAlgorithm::workspace_bytes(const Conv2dDesc& desc, DType dtype) const {
  return std::max({workspace_bytes(desc, dtype, ConvPass::forward),
                   workspace_bytes(desc, dtype, ConvPass::backward_data),
                   workspace_bytes(desc, dtype, ConvPass::backward_weights)});
}

std::string conv_op_name(std::string_view backend, ConvAlgo algo, ConvPass pass) {
  return detail::concat("conv2d ", conv_pass_name(pass), " (", backend, ", ", conv_algo_name(algo), ")");
}

void ConvAlgorithmRegistry::add(const ConvAlgorithm& algorithm) {
  CK_CHECK(find(algorithm.algo()) == nullptr, backend_, " conv2d: algorithm ", conv_algo_name(algorithm.algo()),
           " is registered twice");
  algorithms_.push_back(&algorithm);
  // Table order, whatever order the registrars ran in.
  std::sort(algorithms_.begin(), algorithms_.end(),
            [](const ConvAlgorithm* a, const ConvAlgorithm* b) { return a->algo() < b->algo(); });
}

const ConvAlgorithm* ConvAlgorithmRegistry::find(ConvAlgo algo) const {
  for (const ConvAlgorithm* a : algorithms_)
    if (a->algo() == algo) return a;
  return nullptr;
}

const ConvAlgorithm& ConvAlgorithmRegistry::get(ConvAlgo algo) const {
  CK_CHECK(algo != ConvAlgo::automatic, backend_, " conv2d: 'automatic' is not an algorithm; resolve it first "
           "(select_conv_plan, or the backend's conv2d_heuristic)");
  const ConvAlgorithm* a = find(algo);
  CK_CHECK(a != nullptr, "conv2d: algorithm ", conv_algo_name(algo), " has no ", backend_, " implementation");
  return *a;
}

std::vector<const ConvAlgorithm*> ConvAlgorithmRegistry::all() const { return algorithms_; }

bool ConvAlgorithmRegistry::runs(ConvAlgo algo, const Conv2dDesc& desc, DType dtype) const {
  const ConvAlgorithm* a = find(algo);
  if (a == nullptr || !a->supports(desc)) return false;
  try {
    a->workspace_bytes(desc, dtype);
    return true;
  } catch (const Error&) {
    return false;  // even a one-image chunk exceeds workspace_limit
  }
}

}  // namespace convkit::conv
