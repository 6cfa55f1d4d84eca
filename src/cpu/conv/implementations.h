#pragma once
// The implemented CPU convolution algorithms, one per file; the registry in
// conv_algorithm.cpp hands them out by ConvAlgo.
#include "cpu/conv/conv_algorithm.h"

namespace convkit::cpu {

const ConvAlgorithm& direct_conv_algorithm();       // direct_conv.cpp
const ConvAlgorithm& im2col_gemm_conv_algorithm();  // im2col_gemm_conv.cpp
// im2col_gemm's GEMM kernels: Eigen on a formed column matrix (the twin and
// the float64 path), our implicit-GEMM tap kernels (tap_gemm.h), or the
// per-pass choice im2col_gemm_conv_algorithm() makes.
enum class GemmKernel { automatic, eigen, taps };
// im2col_gemm held to one kernel where it applies, for the tests and benchmarks.
const ConvAlgorithm& im2col_gemm_conv_algorithm_with_kernel(GemmKernel kernel);
const ConvAlgorithm& fft_conv_algorithm();          // fft_conv.cpp
const ConvAlgorithm& winograd_conv_algorithm();     // winograd_conv.cpp
// winograd with every pass on one output tile size (2 or 4), for the tests;
// winograd_conv_algorithm() picks the size per pass.
const ConvAlgorithm& winograd_conv_algorithm_with_tile(int output_tile);

}  // namespace convkit::cpu
