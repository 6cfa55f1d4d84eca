#pragma once
// Pooling modules over NCHW input, wrapping convkit::max_pool2d / avg_pool2d /
// global_avg_pool2d. Options are the functional Pool2dParams:
//   nn::MaxPool2d pool(nn::MaxPool2dOptions(3).stride(2).padding(1));
//   nn::MaxPool2d pool2(2);   // kernel 2, stride 2 (stride defaults to the kernel)
#include <cstdint>

#include "convkit/nn/module.h"
#include "convkit/ops/pool.h"

namespace convkit::nn {

using MaxPool2dOptions = Pool2dParams;
using AvgPool2dOptions = Pool2dParams;

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const MaxPool2dOptions& options);
  explicit MaxPool2d(std::int64_t kernel_size) : MaxPool2d(MaxPool2dOptions(kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string spec() const override;
  const MaxPool2dOptions& options() const { return options_; }

 private:
  MaxPool2dOptions options_;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const AvgPool2dOptions& options);
  explicit AvgPool2d(std::int64_t kernel_size) : AvgPool2d(AvgPool2dOptions(kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string spec() const override;
  const AvgPool2dOptions& options() const { return options_; }

 private:
  AvgPool2dOptions options_;
};

// Mean over H and W: [N, C, H, W] -> [N, C, 1, 1] (PyTorch's AdaptiveAvgPool2d(1);
// follow it with Flatten for Keras' GlobalAveragePooling2D shape [N, C]).
class GlobalAvgPool2d : public Module {
 public:
  GlobalAvgPool2d() : Module("GlobalAvgPool2d") {}
  Tensor forward(const Tensor& x) override;
  std::string spec() const override;
};

}  // namespace convkit::nn
