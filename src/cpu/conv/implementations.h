#pragma once
// The implemented CPU convolution algorithms, one per file; the registry in
// conv_algorithm.cpp hands them out by ConvAlgo.
#include "cpu/conv/conv_algorithm.h"

namespace convkit::cpu {

const ConvAlgorithm& direct_conv_algorithm();       // direct_conv.cpp
const ConvAlgorithm& im2col_gemm_conv_algorithm();  // im2col_gemm_conv.cpp
const ConvAlgorithm& fft_conv_algorithm();          // fft_conv.cpp
const ConvAlgorithm& winograd_conv_algorithm();     // winograd_conv.cpp
// winograd with every pass on one output tile size (2 or 4), for the tests;
// winograd_conv_algorithm() picks the size per pass.
const ConvAlgorithm& winograd_conv_algorithm_with_tile(int output_tile);

}  // namespace convkit::cpu
