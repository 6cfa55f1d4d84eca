#pragma once
// The GPU convolution algorithms: the one interface of conv/conv_algorithm.h
// on device pointers, one file per algorithm (gpu_conv_NAME.cpp, kernels in
// kernels/conv2d_NAME.cu), each registering itself in conv_registry().
// GpuBackend's conv2d_* methods (gpu_conv.cpp) dispatch through it.
#include <string>

#include "conv/conv_algorithm.h"
#include "convkit/backend/kernel_versions.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

#if defined(__CUDACC__)
inline constexpr const char* kConvBackendName = "cuda";
#else
inline constexpr const char* kConvBackendName = "sim";
#endif

// ConvAlgorithm::kernel_choices for a GPU algorithm: `family`'s
// tuning_versions that `runs(version)` accepts for the descriptor at hand.
template <class Runs>
KernelChoices kernel_choices_of(const std::string& family, Runs runs) {
  KernelChoices choices{family, {}};
  for (int v : tuning_versions(family))
    if (runs(v)) choices.versions.push_back(v);
  return choices;
}

// This build's implementations (sim and cuda each have their own).
conv::ConvAlgorithmRegistry& conv_registry();

// "conv2d forward (sim, im2col_gemm)": the op name errors start with.
std::string conv_op_name(ConvAlgo algo, ConvPass pass);

const conv::ConvAlgorithm& direct_gpu_conv_algorithm();       // gpu_conv_direct.cpp
const conv::ConvAlgorithm& im2col_gemm_gpu_conv_algorithm();  // gpu_conv_im2col_gemm.cpp
const conv::ConvAlgorithm& fft_gpu_conv_algorithm();          // gpu_conv_fft.cpp
const conv::ConvAlgorithm& winograd_gpu_conv_algorithm();     // gpu_conv_winograd.cpp
// With output tile 2 or 4 for every pass (0: chosen per pass, as registered).
const conv::ConvAlgorithm& winograd_gpu_conv_algorithm_with(int output_tile);

}  // namespace convkit::CK_GPU_NS
