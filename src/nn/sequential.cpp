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

// The fusions, each exact for finite inputs:
// - ReLU then max pooling: pooled first, then rectified. relu is monotone,
//   so it commutes with max: the output is the same, and so is the gradient
//   (a window's gradient goes to the same first maximum, or, where the
//   window's maximum is not positive, to nowhere in both orders). The ReLU,
//   forward and backward, then runs on the pooled tensor, a quarter of the
//   size for 2x2 windows (docs/performance-log.md, step 34).
// - Batch norm then ReLU: one pass (BatchNormBase::forward_relu) instead of
//   a second one over the normalised tensor; unless a max pool follows,
//   which the ReLU then goes after (above).
Sequential::StepKind Sequential::step_at(std::size_t i, std::size_t end) const {
  const auto& children = named_children();
  auto is_at = [&]<typename M>(std::size_t k) {
    return k < end && dynamic_cast<const M*>(children[k].second.get()) != nullptr;
  };
  if (is_at.template operator()<ReLU>(i) && is_at.template operator()<MaxPool2d>(i + 1))
    return StepKind::pool_then_relu;
  if (is_at.template operator()<BatchNormBase>(i) && is_at.template operator()<ReLU>(i + 1) &&
      !is_at.template operator()<MaxPool2d>(i + 2))
    return StepKind::batch_norm_relu;
  if (is_at.template operator()<ReLU>(i)) return StepKind::relu;
  return StepKind::single;
}

std::vector<std::pair<std::size_t, std::size_t>> Sequential::steps() const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i < size();) {
    const StepKind k = step_at(i, size());
    const std::size_t next = i + (k == StepKind::pool_then_relu || k == StepKind::batch_norm_relu ? 2 : 1);
    out.emplace_back(i, next);
    i = next;
  }
  return out;
}

Tensor Sequential::forward(const Tensor& input) { return forward_range(input, 0, size(), input); }

Tensor Sequential::forward_range(Tensor x, std::size_t begin, std::size_t end, const Tensor& keep) {
  CK_CHECK(begin <= end && end <= size(), "Sequential::forward_range: [", begin, ", ", end,
           ") is not a range of its ", size(), " children");
  const auto& children = named_children();
  // A ReLU rectifies the activation in place when this loop holds the only
  // handle on it and nothing shares its storage (no saved copy, no view, not
  // the caller's tensor `keep`): the activation is then invisible outside,
  // and the pass skips writing a new buffer, a third of its memory traffic.
  // relu_ records the same backward as relu.
  auto rectify = [&](Module& relu) {
    if (held_only_here(x, keep)) {
      x.relu_();
    } else {
      x = relu.forward(x);
    }
  };
  for (std::size_t i = begin; i < end; ++i) {
    Module& child = *children[i].second;
    switch (step_at(i, end)) {
      case StepKind::pool_then_relu:
        x = children[i + 1].second->forward(x);
        rectify(child);
        ++i;
        break;
      case StepKind::batch_norm_relu:
        x = dynamic_cast<BatchNormBase&>(child).forward_relu(x);
        ++i;
        break;
      case StepKind::relu:
        rectify(child);
        break;
      case StepKind::single:
        x = child.forward(x);
        break;
    }
  }
  return x;
}

}  // namespace convkit::nn
