#pragma once
// The implemented CPU convolution algorithms, one per file; each file
// registers its default instance in conv_registry(). These accessors reach
// them (and their variants) directly, for the tests and benchmarks.
#include "cpu/conv/conv_algorithm.h"

namespace convkit::cpu {

const ConvAlgorithm& direct_conv_algorithm();       // conv_direct.cpp
const ConvAlgorithm& im2col_gemm_conv_algorithm();  // conv_im2col_gemm.cpp
// The GEMM kernels of im2col_gemm and of winograd's products: Eigen (the
// twin and the float64 path; im2col_gemm's on a formed column matrix), our
// tap kernels (tap_gemm.h), or the algorithm's own choice.
enum class GemmKernel { automatic, eigen, taps };
// im2col_gemm held to one kernel where it applies, for the tests and benchmarks.
const ConvAlgorithm& im2col_gemm_conv_algorithm_with_kernel(GemmKernel kernel);
const ConvAlgorithm& fft_conv_algorithm();          // conv_fft.cpp
const ConvAlgorithm& winograd_conv_algorithm();     // conv_winograd.cpp
// winograd with every pass on one output tile size (2 or 4; 0 picks it per
// pass, as winograd_conv_algorithm() does) and its products on one GEMM
// kernel (automatic: the tap kernels for float32 where the build has them),
// for the tests and benchmarks.
const ConvAlgorithm& winograd_conv_algorithm_with(int output_tile, GemmKernel kernel);

}  // namespace convkit::cpu
