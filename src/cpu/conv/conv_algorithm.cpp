// Registry of the CPU convolution algorithms.
#include "cpu/conv/conv_algorithm.h"

namespace convkit::cpu {

conv::ConvAlgorithmRegistry& conv_registry() {
  static conv::ConvAlgorithmRegistry registry("cpu");
  return registry;
}

const ConvAlgorithm& conv_algorithm(ConvAlgo algo) { return conv_registry().get(algo); }

std::vector<const ConvAlgorithm*> conv_algorithms() { return conv_registry().all(); }

}  // namespace convkit::cpu
