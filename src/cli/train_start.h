#pragma once
// Where `convkit train` starts from: the weights of --init (fine-tuning) or
// --resume, and the layers --freeze keeps fixed.
#include <memory>
#include <string>
#include <vector>

#include "convkit/io/checkpoint.h"
#include "convkit/nn/module.h"

namespace convkit::cli {

// What to do when only the last layer (the module that owns the model's last
// parameter) differs in shape, as it does for another class count.
enum class HeadMismatch {
  refuse,            // an error naming the shapes (--resume: the run is another one)
  suggest_new_head,  // the same, pointing to --new-head (--init without it)
  replace,           // keep that layer's fresh initial weights, load the rest (--init --new-head)
};

// Copies the checkpoint's weights into `model`; `source` ("--init run/a.ckpt")
// starts every error. A shape mismatch names the parameter and both shapes.
void load_start_weights(nn::Module& model, const io::Checkpoint& checkpoint, const std::string& source,
                        HeadMismatch head);

// --freeze LAYER: turns requires_grad off for every parameter up to and
// including LAYER's, in named_parameters() order. LAYER is a module path
// ("features.3", "layer1") or the index of a top-level child (for a
// Sequential the two agree). Returns the frozen parameters' names; throws
// for an unknown layer, or one that would leave nothing to train.
std::vector<std::string> freeze_through(nn::Module& model, const std::string& layer);

// The parameters still to train (requires_grad set), for the optimizer.
std::vector<Tensor> trainable_parameters(const nn::Module& model);

}  // namespace convkit::cli
