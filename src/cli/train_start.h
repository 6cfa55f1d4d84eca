#pragma once
// Where `convkit train` starts from: the weights of --init (fine-tuning) or
// --resume, and the layers --freeze keeps fixed.
#include <memory>
#include <string>
#include <vector>

#include "convkit/io/checkpoint.h"
#include "convkit/nn/module.h"

namespace convkit::cli {

// Copies the checkpoint's weights into `model`; `source` ("--init run/a.ckpt")
// starts every error. A shape mismatch names the parameter and both shapes.
// With `new_head`, the last layer (the module that owns the model's last
// parameter) may differ in shape, as it does for another class count, and
// keeps its fresh initial weights; without it such a checkpoint is refused
// with a pointer to --new-head.
void load_start_weights(nn::Module& model, const io::Checkpoint& checkpoint, const std::string& source,
                        bool new_head);

// --freeze LAYER: turns requires_grad off for every parameter up to and
// including LAYER's, in named_parameters() order. LAYER is a module path
// ("features.3", "layer1") or the index of a top-level child (for a
// Sequential the two agree). Returns the frozen parameters' names; throws
// for an unknown layer, or one that would leave nothing to train.
std::vector<std::string> freeze_through(nn::Module& model, const std::string& layer);

// The parameters still to train (requires_grad set), for the optimizer.
std::vector<Tensor> trainable_parameters(const nn::Module& model);

}  // namespace convkit::cli
