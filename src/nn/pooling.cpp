#include "convkit/nn/pooling.h"

#include <sstream>

namespace convkit::nn {

namespace {

void check_options(const char* layer, const Pool2dParams& p) {
  CK_CHECK(p.kernel_[0] > 0 && p.kernel_[1] > 0, layer, ": kernel size must be positive, got ",
           p.kernel_[0], "x", p.kernel_[1]);
  CK_CHECK(p.stride_[0] >= 0 && p.stride_[1] >= 0, layer, ": stride must be positive (0 = the kernel size), got ",
           p.stride_[0], "x", p.stride_[1]);
  CK_CHECK(p.padding_[0] >= 0 && p.padding_[1] >= 0 && 2 * p.padding_[0] <= p.kernel_[0] &&
               2 * p.padding_[1] <= p.kernel_[1],
           layer, ": padding must be between 0 and half the kernel, got ", p.padding_[0], "x", p.padding_[1],
           " for kernel ", p.kernel_[0], "x", p.kernel_[1]);
}

void check_input(const char* layer, const Tensor& x) {
  CK_CHECK(x.defined(), layer, ": the input is undefined");
  CK_CHECK(x.dim() == 4, layer, ": expected input [N, C, H, W], got shape ", x.shape());
}

std::string describe(const Pool2dParams& p, bool average) {
  const auto stride = p.stride_[0] == 0 && p.stride_[1] == 0 ? p.kernel_ : p.stride_;
  std::ostringstream os;
  os << "kernel_size=(" << p.kernel_[0] << ", " << p.kernel_[1] << "), stride=(" << stride[0] << ", "
     << stride[1] << "), padding=(" << p.padding_[0] << ", " << p.padding_[1] << ")";
  if (p.ceil_mode_) os << ", ceil_mode=True";
  if (average && !p.count_include_pad_) os << ", count_include_pad=False";
  return os.str();
}

}  // namespace

MaxPool2d::MaxPool2d(const MaxPool2dOptions& options) : Module("MaxPool2d"), options_(options) {
  check_options("MaxPool2d", options_);
}

Tensor MaxPool2d::forward(const Tensor& x) {
  check_input("MaxPool2d", x);
  return max_pool2d(x, options_);
}

std::string MaxPool2d::extra_repr() const { return describe(options_, false); }

AvgPool2d::AvgPool2d(const AvgPool2dOptions& options) : Module("AvgPool2d"), options_(options) {
  check_options("AvgPool2d", options_);
}

Tensor AvgPool2d::forward(const Tensor& x) {
  check_input("AvgPool2d", x);
  return avg_pool2d(x, options_);
}

std::string AvgPool2d::extra_repr() const { return describe(options_, true); }

Tensor GlobalAvgPool2d::forward(const Tensor& x) {
  check_input("GlobalAvgPool2d", x);
  return global_avg_pool2d(x);
}

}  // namespace convkit::nn
