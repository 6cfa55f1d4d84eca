// The consistency rules of Conv2dDesc (the algorithms' names: algorithms.cpp).
#include "convkit/backend/conv_desc.h"

#include <sstream>
#include <vector>

#include "convkit/core/error.h"

namespace convkit {

std::string_view conv_pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward: return "forward";
    case ConvPass::backward_data: return "backward_data";
    case ConvPass::backward_weights: return "backward_weights";
  }
  return "unknown pass";
}

void Conv2dDesc::validate(const char* op) const {
  // Every problem is collected so that one error message lists them all.
  std::vector<std::string> problems;
  auto need_positive = [&](const char* name, std::int64_t v) {
    if (v < 1) problems.push_back(detail::concat(name, " must be >= 1 (got ", v, ")"));
  };
  auto need_non_negative = [&](const char* name, std::int64_t v) {
    if (v < 0) problems.push_back(detail::concat(name, " must be >= 0 (got ", v, ")"));
  };
  need_positive("batch N", N);
  need_positive("input channels C", C);
  need_positive("input height H", H);
  need_positive("input width W", W);
  need_positive("output channels K", K);
  need_positive("filter height R", R);
  need_positive("filter width S", S);
  need_positive("stride_h", stride_h);
  need_positive("stride_w", stride_w);
  need_non_negative("pad_top", pad_top);
  need_non_negative("pad_bottom", pad_bottom);
  need_non_negative("pad_left", pad_left);
  need_non_negative("pad_right", pad_right);
  need_positive("dilation_h", dilation_h);
  need_positive("dilation_w", dilation_w);
  need_positive("groups", groups);
  if (groups >= 1) {
    if (C >= 1 && C % groups != 0) {
      problems.push_back(detail::concat("input channels C (", C, ") is not divisible by groups (",
                                        groups, ")"));
    }
    if (K >= 1 && K % groups != 0) {
      problems.push_back(detail::concat("output channels K (", K,
                                        ") is not divisible by groups (", groups, ")"));
    }
  }
  // P() and Q() divide with truncation toward zero, so a slightly-too-small
  // input would still give P == 1; compare padded extent with the dilated
  // filter extent directly instead.
  if (H >= 1 && R >= 1 && dilation_h >= 1 && pad_top >= 0 && pad_bottom >= 0) {
    const std::int64_t padded = H + pad_top + pad_bottom;
    const std::int64_t extent = dilation_h * (R - 1) + 1;
    if (padded < extent) {
      problems.push_back(detail::concat("output height is not positive: padded input height H+pad_top+pad_bottom = ",
                                        padded, " is smaller than the dilated filter height (R-1)*dilation_h+1 = ",
                                        extent));
    }
  }
  if (W >= 1 && S >= 1 && dilation_w >= 1 && pad_left >= 0 && pad_right >= 0) {
    const std::int64_t padded = W + pad_left + pad_right;
    const std::int64_t extent = dilation_w * (S - 1) + 1;
    if (padded < extent) {
      problems.push_back(detail::concat("output width is not positive: padded input width W+pad_left+pad_right = ",
                                        padded, " is smaller than the dilated filter width (S-1)*dilation_w+1 = ",
                                        extent));
    }
  }
  if (problems.empty()) return;
  std::ostringstream os;
  os << (op != nullptr ? op : "conv2d") << ": invalid convolution descriptor: ";
  for (std::size_t i = 0; i < problems.size(); ++i) os << (i ? "; " : "") << problems[i];
  os << "; descriptor: " << str();
  throw Error(os.str());
}

std::string Conv2dDesc::str() const {
  std::ostringstream os;
  os << "Conv2dDesc{N=" << N << " C=" << C << " H=" << H << " W=" << W << " K=" << K << " R=" << R
     << " S=" << S << " stride=" << stride_h << "x" << stride_w << " pad(t,b,l,r)=" << pad_top << ","
     << pad_bottom << "," << pad_left << "," << pad_right << " dilation=" << dilation_h << "x"
     << dilation_w << " groups=" << groups;
  // The output size is only meaningful (and only safe to compute) with positive strides.
  if (stride_h >= 1 && stride_w >= 1) os << " -> P=" << P() << " Q=" << Q();
  os << "}";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Conv2dDesc& d) { return os << d.str(); }

}  // namespace convkit
