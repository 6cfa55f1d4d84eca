#pragma once
// The units a model's forward runs one after another: the children of a
// plain nn::Sequential (nested plain Sequentials opened, so ResNet's
// "layer1" gives "layer1.0", "layer1.1"), or the whole model as one unit
// named "(model)". Running the units in turn computes exactly the model's
// forward, which lets the profiler time each one and fit() find the first
// whose output is not finite.
#include <string>
#include <utility>
#include <vector>

namespace convkit::nn { class Module; }

namespace convkit::train {

std::vector<std::pair<std::string, nn::Module*>> forward_units(nn::Module& model);

}  // namespace convkit::train
