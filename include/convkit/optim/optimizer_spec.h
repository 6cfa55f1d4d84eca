#pragma once
// Optimizers as data, for checkpoints: the type and hyper-parameters in the
// spec syntax of convkit/nn/model_spec.h, e.g.
//   Adam(lr=0.001, betas=[0.9, 0.999], eps=1e-08, weight_decay=0.0, fused=true, groups=[10])
// `groups` lists how many parameters each param group holds; build_optimizer
// splits the parameters it is given in that order, so a model's
// parameters() rebuild the groups of an optimizer made over them in order.
// Per-group rates and decays are not in the spec but in the optimizer's
// state_dict (param_groups.<g>.lr), which a checkpoint restores after building.
#include <memory>
#include <string>
#include <vector>

#include "convkit/core/tensor.h"
#include "convkit/optim/optimizer.h"

namespace convkit::optim {

// The spec of an SGD, Adam, AdamW or RMSprop; throws Error for other types.
std::string optimizer_spec(const Optimizer& optimizer);
// Rebuilds an optimizer of that type and hyper-parameters over `params`.
// Throws Error on an unknown type or option (with its position), or when the
// group sizes do not add up to params.size().
std::unique_ptr<Optimizer> build_optimizer(const std::string& spec, std::vector<Tensor> params);

}  // namespace convkit::optim
