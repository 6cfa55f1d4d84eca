#pragma once
// The units a model's forward runs one after another: the children of a
// plain nn::Sequential (nested plain Sequentials opened, so ResNet's
// "layer1" gives "layer1.0", "layer1.1"), or the whole model as one unit
// named "(model)". Running the units in turn computes exactly the model's
// forward, which lets the profiler time each one and fit() find the first
// whose output is not finite.
//
// Split::per_layer gives one unit per child. Split::as_run groups the
// children a Sequential runs as one step (Sequential::steps: a BatchNorm and
// its ReLU, a ReLU and the MaxPool2d after it) into one unit named "1+2"
// of type "BatchNorm2d+ReLU", run with those fusions (every step runs through
// Sequential::forward_range, so a lone ReLU rectifies in place as in the
// forward): what a profiler must time, since the fused code is not the
// layers' own.
#include <cstddef>
#include <string>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit::nn {
class Module;
class Sequential;
}  // namespace convkit::nn

namespace convkit::train {

struct ForwardUnit {
  std::string name;  // "3", "layer1.0", "1+2", or "(model)"
  std::string type;  // Module::name(), joined by '+' for a fused step
  // Children [begin, end) of `parent`, or `module` alone when parent is null.
  nn::Sequential* parent = nullptr;
  std::size_t begin = 0, end = 0;
  nn::Module* module = nullptr;

  // The unit's forward of x. x is taken by value so that an in-place ReLU
  // may own it; `keep` (the model's input) is never written in place.
  Tensor run(Tensor x, const Tensor& keep) const;
};

enum class Split { per_layer, as_run };

std::vector<ForwardUnit> forward_units(nn::Module& model, Split split);

}  // namespace convkit::train
