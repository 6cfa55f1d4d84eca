#pragma once
// nn::Flatten: merges dims start_dim..end_dim into one (default: everything
// after the batch dim, [N, C, H, W] -> [N, C*H*W]), as torch.nn.Flatten.
#include <cstdint>

#include "convkit/nn/module.h"

namespace convkit::nn {

class Flatten : public Module {
 public:
  explicit Flatten(std::int64_t start_dim = 1, std::int64_t end_dim = -1);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string spec() const override;
  std::int64_t start_dim() const { return start_dim_; }
  std::int64_t end_dim() const { return end_dim_; }

 private:
  std::int64_t start_dim_, end_dim_;
};

}  // namespace convkit::nn
