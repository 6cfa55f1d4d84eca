// Convolution passes as correlations.
#include "conv/correlation.h"

namespace convkit::conv {

CorrelationShape forward_correlation(const Conv2dDesc& d) {
  CorrelationShape s;
  s.N = d.N;
  s.in_channels = d.C;
  s.H = d.H;
  s.W = d.W;
  s.out_channels = d.K;
  s.groups = d.groups;
  s.R = d.R;
  s.S = d.S;
  s.dil_h = d.dilation_h;
  s.dil_w = d.dilation_w;
  s.pad_top = d.pad_top;
  s.pad_left = d.pad_left;
  s.P = d.P();
  s.Q = d.Q();
  return s;
}

CorrelationShape backward_data_correlation(const Conv2dDesc& d) {
  // dx[h] = sum_{p, r : h = p - pad_top + r*dil} dy[p] w[r]. With r' = R-1-r,
  // p = h - (extent - 1 - pad_top) + r'*dil: a correlation of dy with the
  // flipped filter, padded by extent - 1 - pad_top.
  CorrelationShape s = forward_correlation(d);
  s.in_channels = d.K;
  s.H = d.P();
  s.W = d.Q();
  s.out_channels = d.C;
  s.pad_top = s.extent_h() - 1 - d.pad_top;
  s.pad_left = s.extent_w() - 1 - d.pad_left;
  s.P = d.H;
  s.Q = d.W;
  return s;
}

}  // namespace convkit::conv
