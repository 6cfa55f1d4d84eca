#pragma once
// The model zoo: the networks the examples and the `convkit` tool train, by name.
//
//   auto net = models::create("fmnist-cnn");                 // Keras init, 10 classes
//   const models::ModelInfo& info = models::info("fmnist-cnn");
//   // info.input_shape = [1, 28, 28], info.loss = LossKind::softmax_cross_entropy
//
// Every model is an nn::Sequential of built-in modules, so its spec() rebuilds
// it and its parameters are named "0.weight", "3.bias", ... (resnet18-cifar
// uses torchvision's names). Models end in logits: the softmax or sigmoid is
// in the loss (cross_entropy / binary_cross_entropy_with_logits), which is
// what `loss` says, and what a predict step applies to get probabilities.
// The Keras ports use Keras' defaults: glorot-uniform weights with zero biases
// and BatchNorm with eps 1e-3 and momentum 0.01 (Keras' 0.99). See
// docs/models.md for each architecture and its parameter counts.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convkit/core/shape.h"
#include "convkit/nn/init.h"

namespace convkit::nn {
class Module;
}

namespace convkit::models {

enum class LossKind {
  softmax_cross_entropy,  // logits [N, classes], int64 targets [N]
  sigmoid_bce,            // one logit [N, 1], float targets 0/1 [N, 1]; two classes
};
const char* loss_kind_name(LossKind loss);  // "softmax_cross_entropy" / "sigmoid_bce"

struct ModelInfo {
  std::string name;         // e.g. "fmnist-cnn"
  std::string description;  // one line
  Shape input_shape;        // [C, H, W], no batch dim
  std::int64_t num_classes = 0;
  LossKind loss = LossKind::softmax_cross_entropy;
  nn::Init default_init = nn::Init::keras;
  // Parameters with the default number of classes, counted as Keras does
  // (see nn::count_parameters): tests and docs/models.md hold these numbers.
  std::int64_t trainable_params = 0;
  std::int64_t non_trainable_params = 0;
};

struct ModelOptions {
  std::optional<nn::Init> init;           // unset: the model's default_init
  std::optional<std::int64_t> num_classes;  // unset: the model's; sigmoid_bce models take only 2
};

// Every model's name, in a fixed order.
std::vector<std::string> names();
// Throws Error naming the unknown model and listing the known ones.
const ModelInfo& info(const std::string& name);
// A new model with freshly initialised weights (drawn from default_generator()).
std::shared_ptr<nn::Module> create(const std::string& name, const ModelOptions& options = {});

}  // namespace convkit::models
