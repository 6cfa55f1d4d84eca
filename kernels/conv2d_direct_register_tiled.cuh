#pragma once
// Versions 3 to 5 of the "conv2d_direct" family
// (kernels/conv2d_direct_register_tiled.cu): a register-tiled forward that
// also runs backward-data at stride 1, as the forward of the flipped,
// transposed problem, and a register-tiled backward-weights, which v4 (and
// v5) split over the pixels. conv2d_direct.cu's launchers route versions 3
// to 5 here where they fit (v5's narrow backward-data excepted) and run
// v2's kernels elsewhere; the contract is conv2d_direct.cuh's.
#include <cstdint>
#include <string>

#include "kernels/conv2d_direct.cuh"

namespace convkit::CK_GPU_NS {

// Empty when v3's own kernel runs this pass of `g` in `dtype`, else why it
// does not (the launchers then run v2's kernel).
std::string direct_register_tiled_forward_cannot(const ConvGeometry& g, DType dtype);
std::string direct_register_tiled_backward_data_cannot(const ConvGeometry& g, DType dtype);
std::string direct_register_tiled_backward_weights_cannot(const ConvGeometry& g, DType dtype);

// How v4 splits backward-weights over the N * tiles (image, pixel tile)
// units: `slices` runs of units_per_slice units each, their partial dw summed
// in slice order. One slice (v3) where v3's kernel does not run, where the
// blocks already fill the GPU, or where the partials would not fit
// workspace_limit.
struct DirectWeightSplit {
  int slices = 1;
  std::int64_t units_per_slice = 0;
};
DirectWeightSplit direct_weight_split(const ConvGeometry& g, DType dtype, std::size_t workspace_limit);

// The passes, for descriptors the checks above accept. Backward-weights with
// more than one slice needs slices * K * Cg * R * S elements of workspace.
void launch_direct_register_tiled_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                                          const void* b, void* y);
void launch_direct_register_tiled_backward_data(DType dtype, const ConvGeometry& g, const void* dy, const void* w,
                                                void* dx);
void launch_direct_register_tiled_backward_weights(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                                                   void* dw, const DirectWeightSplit& split, void* workspace);

}  // namespace convkit::CK_GPU_NS
