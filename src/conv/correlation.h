#pragma once
// Every convolution pass that is not a weight gradient is one stride-1 (for
// backward-data: when the forward stride is 1), grouped, multi-channel correlation,
//
//   out[n][o][p][q] = sum_{i in group of o, r < R, s < S}
//                       in[n][i][p - pad_top + r*dil_h][q - pad_left + s*dil_w] * tap(o, i, r, s)
//
// (taps outside `in` read zero). Forward is that with in = x, out = y and the
// filters as they are; backward-data is that with in = dy, out = dx and the
// filters flipped in both axes and transposed within each group. The fft and
// winograd algorithms (cpu and gpu) and the tap kernels of im2col_gemm run
// backward-data this way.
#include <cstdint>

#include "convkit/backend/conv_desc.h"

namespace convkit::conv {

struct CorrelationShape {
  std::int64_t N = 0, in_channels = 0, H = 0, W = 0;
  std::int64_t out_channels = 0, groups = 1;
  std::int64_t R = 0, S = 0, dil_h = 1, dil_w = 1;
  // May be negative (backward-data of a convolution padded by more than the
  // filter extent): then the first output reads from inside the input.
  std::int64_t pad_top = 0, pad_left = 0;
  std::int64_t P = 0, Q = 0;  // output size

  std::int64_t in_per_group() const { return in_channels / groups; }
  std::int64_t out_per_group() const { return out_channels / groups; }
  std::int64_t extent_h() const { return (R - 1) * dil_h + 1; }
  std::int64_t extent_w() const { return (S - 1) * dil_w + 1; }
};

// The forward convolution, read as a correlation (its stride is ignored:
// callers support stride 1 only). in = x, out = y, tap(k, c, r, s) = w[k][c][r][s].
CorrelationShape forward_correlation(const Conv2dDesc& d);
// Backward-data of a stride-1 convolution as a correlation: in = dy (K
// channels, P x Q), out = dx (C channels, H x W), tap(c, k, r, s) =
// w[k'][c mod Cg][R-1-r][S-1-s] with k' = (c / Cg) * Kg + k (flipped_filter_index),
// padding extent - 1 - pad.
CorrelationShape backward_data_correlation(const Conv2dDesc& d);

// Index into w (K x Cg x R x S) of backward-data's tap(c, k, r, s): output
// channel c (of C), input channel k within c's group (of Kg), tap (r, s).
inline std::int64_t flipped_filter_index(const Conv2dDesc& d, std::int64_t c, std::int64_t k, std::int64_t r,
                                         std::int64_t s) {
  const std::int64_t Cg = d.C_per_group(), Kg = d.K_per_group();
  const std::int64_t filter = (c / Cg) * Kg + k;
  return ((filter * Cg + c % Cg) * d.R + (d.R - 1 - r)) * d.S + (d.S - 1 - s);
}

}  // namespace convkit::conv
