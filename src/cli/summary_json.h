#pragma once
// `convkit summary MODEL --json`: the layer table as data, with each layer's
// structural options (kernel, stride, padding, pooling window, dropout rate,
// BatchNorm settings, ...), so that another library's network can be checked
// against it layer by layer (benchmarks/structure_check.py does so for PyTorch).
#include <string>

#include "convkit/core/shape.h"

namespace convkit::nn {
class Module;
}

namespace convkit::cli {

// One line of JSON: {"title", "input", "trainable", "non_trainable", "layers":
// [{"name", "type", "input_shape", "output_shape", "trainable",
// "non_trainable", ...options}]}. Options use PyTorch's argument names; a
// 'same' convolution's padding is resolved to [top, bottom, left, right] for
// the layer's input, and a pool's default stride to its kernel.
std::string summary_json(const std::string& title, nn::Module& model, const Shape& input);

}  // namespace convkit::cli
