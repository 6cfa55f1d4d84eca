// Registry of the CPU convolution algorithms.
#include "cpu/conv/conv_algorithm.h"

#include "convkit/core/error.h"

namespace convkit::cpu {

conv::ConvAlgorithmRegistry& conv_registry() {
  static conv::ConvAlgorithmRegistry registry("cpu");
  return registry;
}

const ConvAlgorithm& conv_algorithm(ConvAlgo algo) {
  CK_CHECK(algo != ConvAlgo::automatic, "cpu conv2d: 'automatic' is not an algorithm; resolve it first with "
           "choose_conv_algorithm_heuristic (cpu/conv/conv_heuristic.h)");
  return conv_registry().get(algo);
}

std::vector<const ConvAlgorithm*> conv_algorithms() { return conv_registry().all(); }

}  // namespace convkit::cpu
