#include "convkit/nn/conv.h"

#include <sstream>

#include "convkit/ops/factory.h"

namespace convkit::nn {

Conv2dOptions& Conv2dOptions::padding(std::string_view mode) {
  if (mode == "same") {
    same_ = true;
  } else if (mode == "valid") {
    padding(0);
  } else {
    CK_FAIL("Conv2dOptions::padding: expected \"same\", \"valid\" or a number, got \"", mode, "\"");
  }
  return *this;
}

Conv2dParams Conv2dOptions::params() const {
  Conv2dParams p;
  p.stride(stride_[0], stride_[1])
      .padding(padding_[0], padding_[1], padding_[2], padding_[3])
      .dilation(dilation_[0], dilation_[1])
      .groups(groups_)
      .algo(algo_)
      .workspace_limit(workspace_limit_);
  if (same_) p.padding_same();
  return p;
}

Conv2d::Conv2d(const Conv2dOptions& options) : Module("Conv2d"), options_(options) {
  const auto& o = options_;
  CK_CHECK(o.in_channels_ > 0 && o.out_channels_ > 0, "Conv2d: channels must be positive, got in ",
           o.in_channels_, ", out ", o.out_channels_);
  CK_CHECK(o.kernel_size_[0] > 0 && o.kernel_size_[1] > 0, "Conv2d: kernel size must be positive, got ",
           o.kernel_size_[0], "x", o.kernel_size_[1]);
  CK_CHECK(o.stride_[0] > 0 && o.stride_[1] > 0, "Conv2d: stride must be positive, got ", o.stride_[0],
           "x", o.stride_[1]);
  CK_CHECK(o.dilation_[0] > 0 && o.dilation_[1] > 0, "Conv2d: dilation must be positive, got ",
           o.dilation_[0], "x", o.dilation_[1]);
  for (auto p : o.padding_) CK_CHECK(p >= 0, "Conv2d: padding must be non-negative, got ", p);
  CK_CHECK(o.groups_ > 0 && o.in_channels_ % o.groups_ == 0 && o.out_channels_ % o.groups_ == 0,
           "Conv2d: groups (", o.groups_, ") must divide in_channels (", o.in_channels_,
           ") and out_channels (", o.out_channels_, ")");
  weight = register_parameter(
      "weight", empty({o.out_channels_, o.in_channels_ / o.groups_, o.kernel_size_[0], o.kernel_size_[1]}));
  if (o.bias_) bias = register_parameter("bias", empty({o.out_channels_}));
  reset_parameters();
}

void Conv2d::reset_parameters() { init_layer(options_.init_, weight, bias); }

Tensor Conv2d::forward(const Tensor& x) {
  CK_CHECK(x.defined(), "Conv2d(", extra_repr(), "): the input is undefined");
  CK_CHECK(x.dim() == 4 && x.size(1) == options_.in_channels_, "Conv2d(", extra_repr(),
           "): expected input [N, ", options_.in_channels_, ", H, W], got shape ", x.shape());
  return conv2d(x, weight, bias, options_.params());
}

std::string Conv2d::extra_repr() const {
  const auto& o = options_;
  std::ostringstream os;
  os << o.in_channels_ << ", " << o.out_channels_ << ", kernel_size=(" << o.kernel_size_[0] << ", "
     << o.kernel_size_[1] << "), stride=(" << o.stride_[0] << ", " << o.stride_[1] << ")";
  const auto& p = o.padding_;
  if (o.same_) {
    os << ", padding=same";
  } else if (p[0] == p[1] && p[2] == p[3]) {
    if (p[0] != 0 || p[2] != 0) os << ", padding=(" << p[0] << ", " << p[2] << ")";
  } else {
    os << ", padding=(" << p[0] << ", " << p[1] << ", " << p[2] << ", " << p[3] << ")";
  }
  if (o.dilation_[0] != 1 || o.dilation_[1] != 1)
    os << ", dilation=(" << o.dilation_[0] << ", " << o.dilation_[1] << ")";
  if (o.groups_ != 1) os << ", groups=" << o.groups_;
  if (!o.bias_) os << ", bias=False";
  if (o.algo_ != ConvAlgo::automatic) os << ", algo=" << conv_algo_name(o.algo_);
  return os.str();
}

void set_conv_algo(Module& root, ConvAlgo algo) {
  root.apply([algo](Module& m) {
    if (auto* conv = dynamic_cast<Conv2d*>(&m)) conv->set_algo(algo);
  });
}

}  // namespace convkit::nn
