// The zoo's layer sets in benchmarks/layer_sets.txt are the convolutions the
// zoo models really run: each model's Conv2d layers, with the input sizes a
// forward pass gives them, at batch 128, counted, equal the set's entries.
#include <gtest/gtest.h>

#include <convkit/convkit.h>

#include <map>

#include "convkit/models/zoo.h"
#include "convkit/nn/resnet.h"
#include "layer_sets.h"

namespace convkit::bench {
namespace {

using Counts = std::map<std::string, std::int64_t>;

std::string key(Conv2dDesc d) {
  d.N = 128;
  return d.str();
}

// Appends the convolutions of `m` run on input `shape` and returns the
// output shape. Modules without convolutions are run on zeros at batch 1.
Shape collect(nn::Module& m, const Shape& shape, Counts& convs) {
  if (auto* conv = dynamic_cast<nn::Conv2d*>(&m)) {
    const Conv2dDesc d = make_conv2d_desc(shape, conv->weight.shape(), conv->options().params());
    ++convs[key(d)];
    return Shape{shape[0], d.K, d.P(), d.Q()};
  }
  if (auto* block = dynamic_cast<nn::BasicBlock*>(&m)) {
    const Shape mid = collect(*block->conv1, shape, convs);
    const Shape out = collect(*block->conv2, mid, convs);
    if (block->downsample) collect(*block->downsample, shape, convs);
    return out;
  }
  if (auto* seq = dynamic_cast<nn::Sequential*>(&m)) {
    Shape s = shape;
    for (const auto& child : seq->children()) s = collect(*child, s, convs);
    return s;
  }
  autograd::NoGradGuard no_grad;
  m.eval();
  return m.forward(zeros(shape)).shape();
}

// Which layer set holds each zoo model's convolutions.
// A BatchNorm variant runs its plain model's convolutions.
std::string set_of(const std::string& model) {
  const std::string bn = "-bn";
  const bool is_bn = model.size() > bn.size() && model.compare(model.size() - bn.size(), bn.size(), bn) == 0;
  return is_bn ? model.substr(0, model.size() - bn.size()) : model;
}

TEST(ZooLayerSets, EveryZooModelsConvolutionsAreItsLayerSet) {
  const std::vector<LayerSet> sets = load_layer_sets(default_layer_sets_path());
  for (const std::string& name : models::names()) {
    SCOPED_TRACE(name);
    const auto model = models::create(name);
    Counts from_model, from_set;
    std::vector<std::int64_t> input{1};
    for (std::int64_t d : models::info(name).input_shape) input.push_back(d);
    collect(*model, Shape(input), from_model);
    for (const LayerEntry& e : find_layer_set(sets, set_of(name)).layers) from_set[key(e.desc)] += e.count;
    EXPECT_EQ(from_model, from_set);
  }
}

}  // namespace
}  // namespace convkit::bench
