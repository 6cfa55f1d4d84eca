#include "convkit/nn/sequential.h"

#include "convkit/nn/activation.h"
#include "convkit/nn/batchnorm.h"

namespace convkit::nn {

Sequential::Sequential() : Module("Sequential") {}

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Sequential() {
  for (const auto& m : modules) push_back(m);
}

std::shared_ptr<Module> Sequential::operator[](std::size_t index) const {
  CK_CHECK(index < size(), "Sequential: index ", index, " is out of range for ", size(), " modules");
  return named_children()[index].second;
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  const auto& children = named_children();
  for (std::size_t i = 0; i < children.size(); ++i) {
    const std::shared_ptr<Module>& child = children[i].second;
    // Batch norm then ReLU: one pass (BatchNormBase::forward_relu) instead of
    // a second one over the normalised tensor.
    auto* bn = dynamic_cast<BatchNormBase*>(child.get());
    const bool relu_next = i + 1 < children.size() && dynamic_cast<const ReLU*>(children[i + 1].second.get());
    if (bn != nullptr && relu_next) {
      x = bn->forward_relu(x);
      ++i;
      continue;
    }
    // A ReLU rectifies the activation before it in place when this loop
    // holds the only handle on it and nothing shares its storage (no saved
    // copy, no view, not the caller's input): the activation is then
    // invisible outside, and the pass skips writing a new buffer, a third
    // of its memory traffic. relu_ records the same backward as relu.
    const bool sole_handle = !x.same(input) && x.impl_ptr().use_count() == 1 && x.storage().use_count() == 1;
    if (sole_handle && dynamic_cast<const ReLU*>(child.get()) != nullptr) {
      x.relu_();
      continue;
    }
    x = child->forward(x);
  }
  return x;
}

}  // namespace convkit::nn
