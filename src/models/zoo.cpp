// The model zoo: each entry's architecture and facts (docs/models.md has the
// tables). Keras ports are written layer for layer from their Keras source,
// with Keras' defaults (glorot-uniform weights, zero biases, BatchNorm eps 1e-3
// and momentum 0.99, which is 0.01 in PyTorch's convention).
#include "convkit/models/zoo.h"

#include <functional>

#include "convkit/core/error.h"
#include "convkit/nn/activation.h"
#include "convkit/nn/batchnorm.h"
#include "convkit/nn/conv.h"
#include "convkit/nn/dropout.h"
#include "convkit/nn/flatten.h"
#include "convkit/nn/linear.h"
#include "convkit/nn/pooling.h"
#include "convkit/nn/resnet.h"
#include "convkit/nn/sequential.h"

namespace convkit::models {

const char* loss_kind_name(LossKind loss) {
  switch (loss) {
    case LossKind::softmax_cross_entropy: return "softmax_cross_entropy";
    case LossKind::sigmoid_bce: return "sigmoid_bce";
  }
  return "?";
}

namespace {

using nn::Init;
using Net = std::shared_ptr<nn::Sequential>;

// Layer helpers that spell a Keras model line by line.
struct Builder {
  Init init;
  Net net = std::make_shared<nn::Sequential>();

  Builder& conv(std::int64_t in, std::int64_t out, std::int64_t kernel, bool same = false) {
    nn::Conv2dOptions o(in, out, kernel);
    o.init(init);
    if (same) o.padding("same");
    net->push_back(std::make_shared<nn::Conv2d>(o));
    return *this;
  }
  Builder& dense(std::int64_t in, std::int64_t out) {
    net->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(in, out).init(init)));
    return *this;
  }
  Builder& relu() {
    net->push_back(std::make_shared<nn::ReLU>());
    return *this;
  }
  // Keras' BatchNormalization defaults.
  static nn::BatchNormOptions keras_bn(std::int64_t channels) {
    return nn::BatchNormOptions(channels).eps(1e-3).momentum(0.01);
  }
  Builder& bn2d(std::int64_t channels) {
    net->push_back(std::make_shared<nn::BatchNorm2d>(keras_bn(channels)));
    return *this;
  }
  Builder& bn1d(std::int64_t features) {
    net->push_back(std::make_shared<nn::BatchNorm1d>(keras_bn(features)));
    return *this;
  }
  Builder& pool(std::int64_t k) {
    net->push_back(std::make_shared<nn::MaxPool2d>(k));
    return *this;
  }
  Builder& dropout(double p) {
    net->push_back(std::make_shared<nn::Dropout>(p));
    return *this;
  }
  Builder& flatten() {
    net->push_back(std::make_shared<nn::Flatten>());
    return *this;
  }
};

// 28x28x1: conv32 same -> 28, pool -> 14, conv64 same -> 14, pool -> 7; 64*7*7 = 3136.
// 'same' padding and dropout 0.25 rather than Keras' valid convs and 0.5:
// measured over seeds, the valid-padding net ends 5 epochs at 89.9-90.4% and
// this one at 91.3% (docs/training.md).
Net fmnist_cnn(Init init, std::int64_t classes) {
  Builder b{init};
  b.conv(1, 32, 3, true).relu().pool(2).conv(32, 64, 3, true).relu().pool(2);
  b.flatten().dense(3136, 128).relu().dropout(0.25).dense(128, classes);
  return b.net;
}

// fmnist-cnn with BatchNorm between each conv / dense and its ReLU.
Net fmnist_cnn_bn(Init init, std::int64_t classes) {
  Builder b{init};
  b.conv(1, 32, 3, true).bn2d(32).relu().pool(2).conv(32, 64, 3, true).bn2d(64).relu().pool(2);
  b.flatten().dense(3136, 128).bn1d(128).relu().dropout(0.5).dense(128, classes);
  return b.net;
}

// keras/examples/cifar10_cnn.py: 32 -> 32 (same) -> 30 -> 15 -> 15 (same) -> 13 -> 6; 64*6*6 = 2304.
Net cifar10_cnn(Init init, std::int64_t classes) {
  Builder b{init};
  b.conv(3, 32, 3, true).relu().conv(32, 32, 3).relu().pool(2).dropout(0.25);
  b.conv(32, 64, 3, true).relu().conv(64, 64, 3).relu().pool(2).dropout(0.25);
  b.flatten().dense(2304, 512).relu().dropout(0.5).dense(512, classes);
  return b.net;
}

// cifar10-cnn with BatchNorm between each conv / hidden dense and its ReLU,
// the BatchNorm variant benchmarks compare (benchmarks/compare_*).
Net cifar10_cnn_bn(Init init, std::int64_t classes) {
  Builder b{init};
  b.conv(3, 32, 3, true).bn2d(32).relu().conv(32, 32, 3).bn2d(32).relu().pool(2).dropout(0.25);
  b.conv(32, 64, 3, true).bn2d(64).relu().conv(64, 64, 3).bn2d(64).relu().pool(2).dropout(0.25);
  b.flatten().dense(2304, 512).bn1d(512).relu().dropout(0.5).dense(512, classes);
  return b.net;
}

// The classic cats-vs-dogs CNN: 64 -> 62 -> 31 -> 29 -> 14; 32*14*14 = 6272; one logit.
Net catdog_cnn(Init init, std::int64_t) {
  Builder b{init};
  b.conv(3, 32, 3).relu().pool(2).conv(32, 32, 3).relu().pool(2);
  b.flatten().dense(6272, 128).relu().dense(128, 1);
  return b.net;
}

// 128x128, four conv(64)+pool pairs: 128 -> 126 -> 63 -> 61 -> 30 -> 28 -> 14 -> 12 -> 6;
// 64*6*6 = 2304; dropout before the dense head.
Net catdog_cnn_improved(Init init, std::int64_t) {
  Builder b{init};
  b.conv(3, 64, 3).relu().pool(2);
  for (int i = 0; i < 3; ++i) b.conv(64, 64, 3).relu().pool(2);
  b.flatten().dropout(0.5).dense(2304, 128).relu().dense(128, 1);
  return b.net;
}

// PyImageSearch's SmallerVGGNet (conv, ReLU, then BatchNorm), 256x256x3. Every
// conv is 'same': 256 -> pool 3 -> 85 -> pool 2 -> 42 -> pool 2 -> 21, and
// 128*21*21 = 56,448 flattened, the only padding that gives 58,091,396 params.
Net datamadness_cnn(Init init, std::int64_t classes) {
  Builder b{init};
  b.conv(3, 32, 3, true).relu().bn2d(32).pool(3).dropout(0.25);
  b.conv(32, 64, 3, true).relu().bn2d(64).conv(64, 64, 3, true).relu().bn2d(64).pool(2).dropout(0.25);
  b.conv(64, 128, 3, true).relu().bn2d(128).conv(128, 128, 3, true).relu().bn2d(128).pool(2).dropout(0.25);
  b.flatten().dense(56448, 1024).relu().bn1d(1024).dropout(0.5).dense(1024, classes);
  return b.net;
}

Net resnet18(Init init, std::int64_t classes) { return nn::resnet18_cifar(classes, init); }

struct Entry {
  ModelInfo info;
  std::function<Net(Init, std::int64_t)> make;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = [] {
    std::vector<Entry> e;
    auto add = [&](std::string name, std::string description, Shape input, std::int64_t classes, LossKind loss,
                   Init init, std::int64_t trainable, std::int64_t non_trainable,
                   std::function<Net(Init, std::int64_t)> make) {
      ModelInfo info;
      info.name = std::move(name);
      info.description = std::move(description);
      info.input_shape = std::move(input);
      info.num_classes = classes;
      info.loss = loss;
      info.default_init = init;
      info.trainable_params = trainable;
      info.non_trainable_params = non_trainable;
      e.push_back({std::move(info), std::move(make)});
    };
    const auto softmax = LossKind::softmax_cross_entropy;
    add("fmnist-cnn", "Fashion-MNIST: 2 x (conv 3x3 same + ReLU + max pool), dense 128, dropout 0.25, dense 10",
        {1, 28, 28}, 10, softmax, Init::keras, 421'642, 0, fmnist_cnn);
    add("fmnist-cnn-bn", "fmnist-cnn with BatchNorm after each conv and the hidden dense layer", {1, 28, 28}, 10,
        softmax, Init::keras, 422'090, 448, fmnist_cnn_bn);
    add("cifar10-cnn", "Keras' cifar10_cnn example: 4 conv (32, 32, 64, 64), 2 max pools, dense 512, dropouts",
        {3, 32, 32}, 10, softmax, Init::keras, 1'250'858, 0, cifar10_cnn);
    add("cifar10-cnn-bn", "cifar10-cnn with BatchNorm after each conv and the hidden dense layer", {3, 32, 32}, 10,
        softmax, Init::keras, 1'252'266, 1'408, cifar10_cnn_bn);
    add("catdog-cnn", "cats vs dogs at 64x64: 2 x (conv 32 + max pool), dense 128, one sigmoid logit",
        {3, 64, 64}, 2, LossKind::sigmoid_bce, Init::keras, 813'217, 0, catdog_cnn);
    add("catdog-cnn-improved",
        "cats vs dogs at 128x128: 4 x (conv 64 + max pool), dropout 0.5, dense 128, one sigmoid logit",
        {3, 128, 128}, 2, LossKind::sigmoid_bce, Init::keras, 407'745, 0, catdog_cnn_improved);
    add("datamadness-cnn", "SmallerVGGNet at 256x256, 4 classes: 5 conv + BatchNorm, dense 1024 + BatchNorm",
        {3, 256, 256}, 4, softmax, Init::keras, 58'088'516, 2'880, datamadness_cnn);
    add("resnet18-cifar", "ResNet-18 for 32x32 inputs (3x3 stem, no max pool), torchvision names",
        {3, 32, 32}, 10, softmax, Init::pytorch, 11'173'962, 9'600, resnet18);
    return e;
  }();
  return all;
}

const Entry& find(const std::string& name) {
  for (const auto& e : entries()) {
    if (e.info.name == name) return e;
  }
  std::string known;
  for (const auto& e : entries()) known += (known.empty() ? "" : ", ") + e.info.name;
  CK_FAIL("models: unknown model '", name, "' (known: ", known, ")");
}

}  // namespace

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& e : entries()) out.push_back(e.info.name);
  return out;
}

const ModelInfo& info(const std::string& name) { return find(name).info; }

std::shared_ptr<nn::Module> create(const std::string& name, const ModelOptions& options) {
  const Entry& e = find(name);
  const std::int64_t classes = options.num_classes.value_or(e.info.num_classes);
  CK_CHECK(classes >= 2, "models::create(", name, "): num_classes must be at least 2, got ", classes);
  CK_CHECK(e.info.loss != LossKind::sigmoid_bce || classes == 2, "models::create(", name,
           "): a sigmoid (binary) model has exactly 2 classes, got num_classes = ", classes);
  return e.make(options.init.value_or(e.info.default_init), classes);
}

}  // namespace convkit::models
