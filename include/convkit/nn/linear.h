#pragma once
// nn::Linear: y = x W^T + b over the last dim, wrapping convkit::linear.
//   nn::Linear fc(nn::LinearOptions(512, 10).bias(true));
// Parameters: weight [out, in] (PyTorch's layout) and, unless bias(false), bias [out].
// Initialisation: PyTorch's default (weight kaiming_uniform_ with a = sqrt(5),
// i.e. U(+-1/sqrt(in)); bias U(+-1/sqrt(in))), or with init(Init::keras)
// Keras' Dense default (glorot_uniform weight, zero bias).
#include <cstdint>

#include "convkit/nn/init.h"
#include "convkit/nn/module.h"

namespace convkit::nn {

struct LinearOptions {
  LinearOptions(std::int64_t in_features, std::int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  LinearOptions& bias(bool b) { bias_ = b; return *this; }
  LinearOptions& init(Init scheme) { init_ = scheme; return *this; }

  std::int64_t in_features_, out_features_;
  bool bias_ = true;
  Init init_ = Init::pytorch;
};

class Linear : public Module {
 public:
  explicit Linear(const LinearOptions& options);
  Linear(std::int64_t in_features, std::int64_t out_features)
      : Linear(LinearOptions(in_features, out_features)) {}

  // x: [..., in_features] -> [..., out_features].
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string spec() const override;
  // Draws fresh weights (and bias) per options().init_.
  void reset_parameters();
  const LinearOptions& options() const { return options_; }

  Tensor weight;
  Tensor bias;  // undefined with bias(false)

 private:
  LinearOptions options_;
};

}  // namespace convkit::nn
