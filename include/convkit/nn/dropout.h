#pragma once
// nn::Dropout: inverted dropout in training mode (zero with probability p,
// scale the rest by 1 / (1 - p); p = 1 zeroes everything), the identity in
// eval mode. The mask comes from the Philox generator, so a seed gives the
// same mask on every device.
#include "convkit/nn/module.h"

namespace convkit::nn {

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string spec() const override;
  double p() const { return p_; }

 private:
  double p_;
};

}  // namespace convkit::nn
