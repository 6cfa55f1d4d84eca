// The heuristic behind ConvAlgo::automatic on the CPU.
#include "cpu/conv/conv_heuristic.h"

#include "convkit/core/error.h"
#include "cpu/conv/conv_algorithm.h"

namespace convkit::cpu {

namespace {

bool runs(ConvAlgo algo, const Conv2dDesc& desc, DType dtype) { return conv_registry().runs(algo, desc, dtype); }

}  // namespace

// Rules, first match wins:
//  1. Stride 1, dilated filter extent >= 5 in both directions and at least
//     2048 output positions in the batch (N*P*Q): fft. Its cost per output
//     barely grows with the filter, while im2col_gemm's grows with R*S; the
//     batch-size condition amortises the K*C/g filter transforms, which for
//     one small image can cost more than the convolution itself.
//  2. 3x3, stride 1, no dilation, at least 8 input and 8 output channels per
//     group and at least 2048 output positions: winograd. It needs 2.25x
//     fewer multiplications; with fewer channels its tile transforms cost
//     more than the GEMMs they save, and with few outputs the tiles do not
//     fill the threads.
//  3. Otherwise im2col_gemm: the fastest for 1x1 filters (a plain GEMM when
//     stride 1 and unpadded), for strided layers, and for 3x3 filters where
//     winograd is not picked.
// An algorithm whose workspace does not fit desc.workspace_limit is skipped:
// fft and winograd fall back to im2col_gemm, and im2col_gemm to direct, which
// needs none.
//
// Measured on the development machine (one AVX-512 core, float32, sum of the
// three passes; C = K in {8, 32, 128}, images 8..64, "same" padding), time of
// fft relative to im2col_gemm:
//   3x3:    1.1 - 3.9   (im2col_gemm always faster)
//   5x5:    0.55 - 1.1 with N*P*Q >= 2048; 1.0 - 1.7 for a single 16x16 or 32x32 image
//   7x7:    0.34 - 0.62 with N*P*Q >= 2048; 3.7 for one 16x16 image with C = K = 128
//   9x9+:   0.14 - 0.56 with N*P*Q >= 2048; 1.4 - 1.7 for one 16x16 image with C = K = 128
// and (2 cores of an AMD EPYC with AVX2, float32, 'same' 3x3 layers, each
// pass; winograd with F(2x2) only, before F(4x4) was added, which is faster
// again on the larger layers) winograd's speed relative to im2col_gemm:
//   C = 1 or 3 into K = 32, batch 128 on 28x28 and 32x32:   0.3 - 0.75
//   C = 8 into K = 32, batch 128 on 32x32:                  1.0 - 1.4
//   C or K = 8 to 32 with the other 16 to 64, batch 128:    1.4 - 1.8
//   C = K = 128 on 28x28, batch 32:                         1.7
//   one 16x16 image, C = K = 64 (64 tiles):                 0.4 - 0.8
//   one 8x8 image, C = K = 32:                              0.5 - 1.2
ConvAlgo choose_conv_algorithm_heuristic(const Conv2dDesc& desc, DType dtype) {
  desc.validate("choose_conv_algorithm_heuristic");
  const std::int64_t extent_h = (desc.R - 1) * desc.dilation_h + 1;
  const std::int64_t extent_w = (desc.S - 1) * desc.dilation_w + 1;
  const bool stride_one = desc.stride_h == 1 && desc.stride_w == 1;
  const bool large_filter = extent_h >= 5 && extent_w >= 5;
  const bool enough_outputs = desc.N * desc.P() * desc.Q() >= 2048;
  if (stride_one && large_filter && enough_outputs && runs(ConvAlgo::fft, desc, dtype)) return ConvAlgo::fft;
  // runs() checks the filter, stride and dilation winograd needs.
  const bool enough_channels = desc.C_per_group() >= 8 && desc.K_per_group() >= 8;
  if (enough_channels && enough_outputs && runs(ConvAlgo::winograd, desc, dtype)) return ConvAlgo::winograd;
  if (runs(ConvAlgo::im2col_gemm, desc, dtype)) return ConvAlgo::im2col_gemm;
  return ConvAlgo::direct;
}

}  // namespace convkit::cpu
