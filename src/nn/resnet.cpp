#include "convkit/nn/resnet.h"

#include "convkit/nn/activation.h"
#include "convkit/nn/flatten.h"
#include "convkit/nn/linear.h"
#include "convkit/nn/pooling.h"
#include "convkit/ops/elementwise.h"

namespace convkit::nn {

namespace {
std::shared_ptr<Conv2d> conv3x3(std::int64_t in, std::int64_t out, std::int64_t stride, Init init) {
  return std::make_shared<Conv2d>(Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false).init(init));
}
}  // namespace

BasicBlock::BasicBlock(std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride, Init init)
    : Module("BasicBlock") {
  conv1 = register_module("conv1", conv3x3(in_channels, out_channels, stride, init));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(out_channels));
  conv2 = register_module("conv2", conv3x3(out_channels, out_channels, 1, init));
  bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(out_channels));
  if (stride != 1 || in_channels != out_channels) {
    downsample = register_module("downsample", std::make_shared<Sequential>());
    downsample->push_back(std::make_shared<Conv2d>(
        Conv2dOptions(in_channels, out_channels, 1).stride(stride).bias(false).init(init)));
    downsample->push_back(std::make_shared<BatchNorm2d>(out_channels));
  }
}

// Each BatchNorm runs fused with what follows it: bn1 with its ReLU,
// bn2 with the shortcut's add and the final ReLU (batch_norm_add_relu).
Tensor BasicBlock::forward(const Tensor& x) {
  const Tensor out = conv2->forward(bn1->forward_relu(conv1->forward(x)));
  const Tensor shortcut = downsample ? downsample->forward(x) : x;
  return bn2->forward_add_relu(out, shortcut);
}

std::shared_ptr<Sequential> resnet18_cifar(std::int64_t num_classes, Init init) {
  CK_CHECK(num_classes > 0, "resnet18_cifar: num_classes must be positive, got ", num_classes);
  auto net = std::make_shared<Sequential>();
  net->push_back("conv1", conv3x3(3, 64, 1, init));
  net->push_back("bn1", std::make_shared<BatchNorm2d>(64));
  net->push_back("relu", std::make_shared<ReLU>());
  std::int64_t in = 64;
  const std::int64_t widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t out = widths[stage];
    auto layer = std::make_shared<Sequential>();
    layer->push_back(std::make_shared<BasicBlock>(in, out, stage == 0 ? 1 : 2, init));
    layer->push_back(std::make_shared<BasicBlock>(out, out, 1, init));
    net->push_back("layer" + std::to_string(stage + 1), layer);
    in = out;
  }
  net->push_back("avgpool", std::make_shared<GlobalAvgPool2d>());
  net->push_back("flatten", std::make_shared<Flatten>());
  net->push_back("fc", std::make_shared<Linear>(LinearOptions(512, num_classes).init(init)));
  return net;
}

}  // namespace convkit::nn
