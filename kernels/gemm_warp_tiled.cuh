#pragma once
// The warp-tiled versions of the "gemm" family (kernels/gemm_warp_tiled.cu):
// v4 warp tiling, v5 cp.async pipeline, v6 per-shape tiles, v7 split-K.
// launch_gemm (gemm.cu) routes those versions here after its own argument
// checks; the contract is gemm.cuh's.
#include <string>

#include "kernels/gemm.cuh"

namespace convkit::CK_GPU_NS {

// Empty when `version` (4..7) can run the arguments that gemm_cannot_implement
// already accepted, else why not.
std::string gemm_warp_tiled_cannot_implement(const GemmArgs& args, int version);
// The configuration `version` runs for these arguments: block, warp and
// thread tiles, pipeline stages, split-K.
std::string gemm_warp_tiled_describe(DType dtype, const GemmArgs& args, int version);
void launch_gemm_warp_tiled(DType dtype, const GemmArgs& args, int version);

}  // namespace convkit::CK_GPU_NS
