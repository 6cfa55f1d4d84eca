#pragma once
// A Keras model.summary()-like table of a model: one row per layer with its
// output shape and parameter count, then the totals.
//
//   std::cout << nn::summary(*model, {1, 28, 28});
//   Input shape: [1, 28, 28] (per example)
//   ________________________________________________________________
//   Layer (type)                  Output Shape               Param #
//   ================================================================
//   0 (Conv2d)                    [-1, 32, 26, 26]               320
//   ...
//   ================================================================
//   Total params: 225,034
//   Trainable params: 225,034
//   Non-trainable params: 0
//
// Counting follows Keras, so numbers match a Keras model of the same
// architecture: trainable = parameters with requires_grad; non-trainable =
// parameters without it plus floating-point buffers (BatchNorm's running mean
// and variance, which Keras also counts); integer buffers (BatchNorm's
// num_batches_tracked) are bookkeeping that Keras does not have, and are not
// counted. Total = trainable + non-trainable.
//
// Rows: a Sequential is walked into (its children become rows named by their
// dotted path, e.g. "layer1.0"); any other module is one row, so a BasicBlock
// is one line, as a Keras sub-model is.
#include <cstdint>
#include <string>
#include <vector>

#include "convkit/core/shape.h"

namespace convkit::nn {

class Module;

struct ParameterCount {
  std::int64_t trainable = 0;
  std::int64_t non_trainable = 0;
  std::int64_t total() const { return trainable + non_trainable; }
};

// Counts a module's (recursive) parameters and buffers as described above. No
// forward pass.
ParameterCount count_parameters(const Module& module);

struct LayerSummary {
  std::string name;    // dotted path in the model, e.g. "layer1.0"
  std::string type;    // Module::name(), e.g. "BasicBlock"
  Shape output_shape;  // with the batch dim, which is -1
  ParameterCount params;
};

struct ModelSummary {
  Shape input_shape;  // [C, H, W] (no batch dim) as given
  std::vector<LayerSummary> layers;
  ParameterCount params;  // the whole model (also counts modules outside the rows)
  // The table, as in the example above.
  std::string str() const;
};

// Runs one forward pass at batch size 1 (zeros, on the device and in the
// dtype of the model's parameters), in eval mode and without autograd, to find
// each row's output shape; the model's training mode, its buffers and the
// random generator are left as they were. `input_shape` excludes the batch dim.
// Throws Error, naming the row, when a layer rejects its input.
ModelSummary summarize(Module& model, const Shape& input_shape);
// summarize(model, input_shape).str().
std::string summary(Module& model, const Shape& input_shape);

}  // namespace convkit::nn
