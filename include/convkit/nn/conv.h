#pragma once
// nn::Conv2d: a 2-D convolution layer over NCHW input, wrapping convkit::conv2d.
//   nn::Conv2d conv(nn::Conv2dOptions(3, 32, 3).stride(1).padding(1).algo(ConvAlgo::fft));
//   nn::Conv2d same(nn::Conv2dOptions(3, 32, 5).padding("same"));
// Parameters: weight [out, in / groups, kh, kw] and, unless bias(false), bias [out].
// Initialisation: PyTorch's default (weight kaiming_uniform_ with a = sqrt(5),
// i.e. U(+-1/sqrt(fan_in)); bias U(+-1/sqrt(fan_in))), or with
// init(Init::keras) Keras' (glorot_uniform weight, zero bias).
#include <array>
#include <cstdint>
#include <string_view>

#include "convkit/nn/init.h"
#include "convkit/nn/module.h"
#include "convkit/ops/conv.h"

namespace convkit::nn {

struct Conv2dOptions {
  Conv2dOptions(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size)
      : Conv2dOptions(in_channels, out_channels, kernel_size, kernel_size) {}
  Conv2dOptions(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_h,
                std::int64_t kernel_w)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_{kernel_h, kernel_w} {}

  Conv2dOptions& stride(std::int64_t s) { stride_ = {s, s}; return *this; }
  Conv2dOptions& stride(std::int64_t sh, std::int64_t sw) { stride_ = {sh, sw}; return *this; }
  Conv2dOptions& padding(std::int64_t p) { padding_ = {p, p, p, p}; same_ = false; return *this; }
  Conv2dOptions& padding(std::int64_t ph, std::int64_t pw) {
    padding_ = {ph, ph, pw, pw};
    same_ = false;
    return *this;
  }
  Conv2dOptions& padding(std::int64_t top, std::int64_t bottom, std::int64_t left, std::int64_t right) {
    padding_ = {top, bottom, left, right};
    same_ = false;
    return *this;
  }
  // "same" (output size = ceil(input / stride); any extra pixel of padding goes
  // bottom/right, as TensorFlow) or "valid" (no padding). Other text throws.
  Conv2dOptions& padding(std::string_view mode);
  Conv2dOptions& dilation(std::int64_t d) { dilation_ = {d, d}; return *this; }
  Conv2dOptions& dilation(std::int64_t dh, std::int64_t dw) { dilation_ = {dh, dw}; return *this; }
  Conv2dOptions& groups(std::int64_t g) { groups_ = g; return *this; }
  Conv2dOptions& bias(bool b) { bias_ = b; return *this; }
  Conv2dOptions& algo(ConvAlgo a) { algo_ = a; return *this; }
  Conv2dOptions& workspace_limit(std::size_t bytes) { workspace_limit_ = bytes; return *this; }
  Conv2dOptions& init(Init scheme) { init_ = scheme; return *this; }

  // The functional parameters these options describe.
  Conv2dParams params() const;

  std::int64_t in_channels_, out_channels_;
  std::array<std::int64_t, 2> kernel_size_;
  std::array<std::int64_t, 2> stride_{1, 1};
  std::array<std::int64_t, 4> padding_{0, 0, 0, 0};  // top, bottom, left, right
  bool same_ = false;
  std::array<std::int64_t, 2> dilation_{1, 1};
  std::int64_t groups_ = 1;
  bool bias_ = true;
  ConvAlgo algo_ = ConvAlgo::automatic;
  std::size_t workspace_limit_ = std::size_t{256} << 20;
  Init init_ = Init::pytorch;
};

class Conv2d : public Module {
 public:
  explicit Conv2d(const Conv2dOptions& options);
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size)
      : Conv2d(Conv2dOptions(in_channels, out_channels, kernel_size)) {}

  // x: [N, in_channels, H, W] -> [N, out_channels, P, Q].
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string spec() const override;
  // Draws fresh weights (and bias) per options().init_.
  void reset_parameters();

  const Conv2dOptions& options() const { return options_; }
  // The algorithm is the one option that may change after construction.
  void set_algo(ConvAlgo algo) { options_.algo_ = algo; }

  Tensor weight;
  Tensor bias;  // undefined with bias(false)

 private:
  Conv2dOptions options_;
};

// Sets the algorithm of every Conv2d in the tree under `root`.
void set_conv_algo(Module& root, ConvAlgo algo);

}  // namespace convkit::nn
