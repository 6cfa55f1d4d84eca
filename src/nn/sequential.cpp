#include "convkit/nn/sequential.h"

#include "convkit/nn/activation.h"
#include "convkit/nn/batchnorm.h"
#include "convkit/nn/pooling.h"

namespace convkit::nn {

Sequential::Sequential() : Module("Sequential") {}

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Sequential() {
  for (const auto& m : modules) push_back(m);
}

std::shared_ptr<Module> Sequential::operator[](std::size_t index) const {
  CK_CHECK(index < size(), "Sequential: index ", index, " is out of range for ", size(), " modules");
  return named_children()[index].second;
}

namespace {

// Whether the forward loop holds the only handle on x and nothing shares its
// storage (no saved copy, no view, not the caller's input).
bool held_only_here(const Tensor& x, const Tensor& input) {
  return !x.same(input) && x.impl_ptr().use_count() == 1 && x.storage().use_count() == 1;
}

}  // namespace

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  const auto& children = named_children();
  auto is_at = [&]<typename M>(std::size_t i) {
    return i < children.size() && dynamic_cast<const M*>(children[i].second.get()) != nullptr;
  };
  // A ReLU rectifies the activation in place when this loop holds the only
  // handle on it and nothing shares its storage (no saved copy, no view, not
  // the caller's input): the activation is then invisible outside, and the
  // pass skips writing a new buffer, a third of its memory traffic. relu_
  // records the same backward as relu.
  auto rectify = [&](Module& relu) {
    if (held_only_here(x, input)) {
      x.relu_();
    } else {
      x = relu.forward(x);
    }
  };
  for (std::size_t i = 0; i < children.size(); ++i) {
    const std::shared_ptr<Module>& child = children[i].second;
    // ReLU then max pooling: pooled first, then rectified. relu is monotone,
    // so it commutes with max: the output is the same, and so is the
    // gradient (a window's gradient goes to the same first maximum, or,
    // where the window's maximum is not positive, to nowhere in both
    // orders). The ReLU, forward and backward, then runs on the pooled
    // tensor, a quarter of the size for 2x2 windows (docs/performance-log.md,
    // step 34). Exact for finite inputs.
    if (is_at.template operator()<ReLU>(i) && is_at.template operator()<MaxPool2d>(i + 1)) {
      x = children[i + 1].second->forward(x);
      rectify(*child);
      ++i;
      continue;
    }
    // Batch norm then ReLU: one pass (BatchNormBase::forward_relu) instead of
    // a second one over the normalised tensor; unless a max pool follows,
    // which the ReLU then goes after (above).
    auto* bn = dynamic_cast<BatchNormBase*>(child.get());
    if (bn != nullptr && is_at.template operator()<ReLU>(i + 1) && !is_at.template operator()<MaxPool2d>(i + 2)) {
      x = bn->forward_relu(x);
      ++i;
      continue;
    }
    if (is_at.template operator()<ReLU>(i)) {
      rectify(*child);
      continue;
    }
    x = child->forward(x);
  }
  return x;
}

}  // namespace convkit::nn
