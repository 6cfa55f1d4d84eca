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
//  1. Stride 1, dilated filter extent >= 5 in both directions and at least
//     2048 output positions in the batch (N*P*Q): fft. Its cost per output
//     barely grows with the filter, while im2col_gemm's grows with R*S; the
//     batch-size condition amortises the K*C/g filter transforms, which for
//     one small image can cost more than the convolution itself.
//  2. Otherwise im2col_gemm: the fastest for 3x3 filters at every size
//     measured, for 1x1 filters (a plain GEMM when stride 1 and unpadded),
//     and for strided layers.
// An algorithm whose workspace does not fit desc.workspace_limit is skipped:
// fft falls back to im2col_gemm and im2col_gemm to direct, which needs none.
//
// Measured on the development machine (one AVX-512 core, float32, sum of the
// three passes; C = K in {8, 32, 128}, images 8..64, "same" padding), time of
// fft relative to im2col_gemm:
//   3x3:    1.1 - 3.9   (im2col_gemm always faster)
//   5x5:    0.55 - 1.1 with N*P*Q >= 2048; 1.0 - 1.7 for a single 16x16 or 32x32 image
//   7x7:    0.34 - 0.62 with N*P*Q >= 2048; 3.7 for one 16x16 image with C = K = 128
//   9x9+:   0.14 - 0.56 with N*P*Q >= 2048; 1.4 - 1.7 for one 16x16 image with C = K = 128
ConvAlgo choose_conv_algorithm_heuristic(const Conv2dDesc& desc, DType dtype) {
  desc.validate("choose_conv_algorithm_heuristic");
  const std::int64_t extent_h = (desc.R - 1) * desc.dilation_h + 1;
  const std::int64_t extent_w = (desc.S - 1) * desc.dilation_w + 1;
  const bool stride_one = desc.stride_h == 1 && desc.stride_w == 1;
  const bool large_filter = extent_h >= 5 && extent_w >= 5;
  const bool enough_outputs = desc.N * desc.P() * desc.Q() >= 2048;
  if (stride_one && large_filter && enough_outputs && runs(ConvAlgo::fft, desc, dtype)) return ConvAlgo::fft;
  if (runs(ConvAlgo::im2col_gemm, desc, dtype)) return ConvAlgo::im2col_gemm;
  return ConvAlgo::direct;
}

}  // namespace convkit::cpu
