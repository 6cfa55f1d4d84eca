#pragma once
// Ordered (name -> tensor) lists: what Module::state_dict(), named_parameters()
// and Optimizer::state_dict() return, and what checkpoints save. Ordered so a
// checkpoint lists tensors in the order the model declares them, as PyTorch does.
#include <string>
#include <utility>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit {

using NamedTensor = std::pair<std::string, Tensor>;
using StateDict = std::vector<NamedTensor>;

// The tensor stored under `name`, or an undefined tensor when there is none.
Tensor find_tensor(const StateDict& dict, const std::string& name);

}  // namespace convkit
