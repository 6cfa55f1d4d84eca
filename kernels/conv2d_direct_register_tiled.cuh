#pragma once
// Version 3 of the "conv2d_direct" family (kernels/conv2d_direct_register_tiled.cu):
// a register-tiled forward that also runs backward-data at stride 1, as the
// forward of the flipped, transposed problem, and a register-tiled
// backward-weights. conv2d_direct.cu's launchers
// route version 3 here where it fits and run v2's kernels elsewhere; the
// contract is conv2d_direct.cuh's.
#include <string>

#include "kernels/conv2d_direct.cuh"

namespace convkit::CK_GPU_NS {

// Empty when v3's own kernel runs this pass of `g` in `dtype`, else why it
// does not (the launchers then run v2's kernel).
std::string direct_register_tiled_forward_cannot(const ConvGeometry& g, DType dtype);
std::string direct_register_tiled_backward_data_cannot(const ConvGeometry& g, DType dtype);
std::string direct_register_tiled_backward_weights_cannot(const ConvGeometry& g, DType dtype);

// The passes, for descriptors the checks above accept.
void launch_direct_register_tiled_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                                          const void* b, void* y);
void launch_direct_register_tiled_backward_data(DType dtype, const ConvGeometry& g, const void* dy, const void* w,
                                                void* dx);
void launch_direct_register_tiled_backward_weights(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                                                   void* dw);

}  // namespace convkit::CK_GPU_NS
