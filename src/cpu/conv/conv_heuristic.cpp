// The heuristic behind ConvAlgo::automatic on the CPU.
#include "cpu/conv/conv_heuristic.h"

#include "convkit/core/error.h"
#include "cpu/conv/conv_algorithm.h"

namespace convkit::cpu {

namespace {

// Whether `algo` can run `desc` within its workspace_limit.
bool runs(ConvAlgo algo, const Conv2dDesc& desc, DType dtype) {
  const ConvAlgorithm& a = conv_algorithm(algo);
  if (!a.supports(desc)) return false;
  try {
    a.workspace_bytes(desc, dtype);
    return true;
  } catch (const Error&) {
    return false;  // even a one-image chunk exceeds workspace_limit
  }
}

}  // namespace

// Rules, first match wins:
//  1. 1x1 filters: im2col_gemm. With stride 1 and no padding it is a plain
//     GEMM on the input (no im2col); otherwise the column matrix is as small
//     as the output.
//  2. Stride 1, filters of extent >= 7 in both directions and outputs of at
//     least 16x16: fft. Its per-output cost is nearly independent of the
//     filter size, while direct and im2col_gemm grow with R*S.
//  3. Otherwise: im2col_gemm, the fastest for the common 3x3 and 5x5 layers.
// An algorithm whose workspace does not fit desc.workspace_limit is skipped:
// fft falls back to im2col_gemm and im2col_gemm to direct, which needs none.
ConvAlgo choose_conv_algorithm_heuristic(const Conv2dDesc& desc, DType dtype) {
  desc.validate("choose_conv_algorithm_heuristic");
  const std::int64_t extent_h = (desc.R - 1) * desc.dilation_h + 1;
  const std::int64_t extent_w = (desc.S - 1) * desc.dilation_w + 1;
  const bool large_filter = extent_h >= 7 && extent_w >= 7;
  const bool stride_one = desc.stride_h == 1 && desc.stride_w == 1;
  const bool large_output = desc.P() >= 16 && desc.Q() >= 16;
  if (!(desc.R == 1 && desc.S == 1) && stride_one && large_filter && large_output &&
      runs(ConvAlgo::fft, desc, dtype)) {
    return ConvAlgo::fft;
  }
  if (runs(ConvAlgo::im2col_gemm, desc, dtype)) return ConvAlgo::im2col_gemm;
  return ConvAlgo::direct;
}

}  // namespace convkit::cpu
