// Registry of the CPU convolution algorithms.
#include "cpu/conv/conv_algorithm.h"

#include "convkit/core/error.h"
#include "cpu/conv/implementations.h"

namespace convkit::cpu {

const ConvAlgorithm& conv_algorithm(ConvAlgo algo) {
  switch (algo) {
    case ConvAlgo::direct: return direct_conv_algorithm();
    case ConvAlgo::im2col_gemm: return im2col_gemm_conv_algorithm();
    case ConvAlgo::fft: return fft_conv_algorithm();
    case ConvAlgo::winograd: return winograd_conv_algorithm();
    case ConvAlgo::automatic:
      CK_FAIL("cpu conv2d: 'automatic' is not an algorithm; resolve it first with "
              "choose_conv_algorithm_heuristic (cpu/conv/conv_heuristic.h)");
  }
  CK_FAIL("cpu conv2d: unknown ConvAlgo value ", static_cast<int>(algo));
}

std::vector<const ConvAlgorithm*> conv_algorithms() {
  return {&direct_conv_algorithm(), &im2col_gemm_conv_algorithm(), &fft_conv_algorithm(),
          &winograd_conv_algorithm()};
}

}  // namespace convkit::cpu
