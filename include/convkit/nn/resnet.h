#pragma once
// Residual networks (He et al. 2016) from the layers above.
#include <cstdint>
#include <memory>

#include "convkit/nn/batchnorm.h"
#include "convkit/nn/conv.h"
#include "convkit/nn/sequential.h"

namespace convkit::nn {

// ResNet's basic block, as torchvision's:
//   out = relu(bn1(conv1(x)));  out = bn2(conv2(out));  out = relu(out + shortcut(x))
// conv1 is 3x3 with `stride`, conv2 3x3 with stride 1, both without bias.
// The shortcut is the identity, or, when the stride is not 1 or the channel
// count changes, `downsample` = Sequential(1x1 conv with `stride`, no bias; BatchNorm2d).
class BasicBlock : public Module {
 public:
  BasicBlock(std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride = 1,
             Init init = Init::pytorch);
  Tensor forward(const Tensor& x) override;
  // BasicBlock(in, out[, stride=s][, init=keras]), read back from conv1.
  std::string spec() const override;

  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<BatchNorm2d> bn1, bn2;
  std::shared_ptr<Sequential> downsample;  // null for the identity shortcut
};

// ResNet-18 for 32x32 inputs (CIFAR): a 3x3 stride-1 stem conv (no bias) with
// BatchNorm and ReLU and no max pool; four stages of two BasicBlocks with
// [64, 128, 256, 512] channels (stages 2-4 start with stride 2); global
// average pooling, flatten, and a linear classifier. Children are named as
// torchvision's ResNet (conv1, bn1, relu, layer1..layer4, avgpool, flatten, fc),
// so parameter names read "layer2.0.downsample.0.weight". 11,173,962
// parameters for 10 classes.
std::shared_ptr<Sequential> resnet18_cifar(std::int64_t num_classes = 10, Init init = Init::pytorch);

}  // namespace convkit::nn
