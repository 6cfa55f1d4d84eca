#include "train/forward_units.h"

#include <typeinfo>

#include "convkit/nn/module.h"
#include "convkit/nn/sequential.h"

namespace convkit::train {

namespace {

std::string joined(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// A class derived from Sequential may override forward, so only the plain
// type is opened.
void collect_units(const std::string& prefix, nn::Module& module, Split split, std::vector<ForwardUnit>& out) {
  if (typeid(module) != typeid(nn::Sequential)) {
    out.push_back({prefix.empty() ? "(model)" : prefix, module.name(), nullptr, 0, 0, &module});
    return;
  }
  auto& seq = static_cast<nn::Sequential&>(module);
  const auto& children = seq.named_children();
  if (split == Split::per_layer) {
    for (const auto& [name, child] : children) collect_units(joined(prefix, name), *child, split, out);
    return;
  }
  for (const auto& [begin, end] : seq.steps()) {
    nn::Module& first = *children[begin].second;
    if (end - begin == 1 && typeid(first) == typeid(nn::Sequential)) {
      collect_units(joined(prefix, children[begin].first), first, split, out);
      continue;
    }
    // Run through the Sequential even when alone, so that a lone ReLU
    // rectifies in place as the forward has it do.
    ForwardUnit unit{"", "", &seq, begin, end, nullptr};
    for (std::size_t i = begin; i < end; ++i) {
      if (i > begin) {
        unit.name += '+';
        unit.type += '+';
      }
      unit.name += joined(prefix, children[i].first);
      unit.type += children[i].second->name();
    }
    out.push_back(std::move(unit));
  }
}

}  // namespace

Tensor ForwardUnit::run(Tensor x, const Tensor& keep) const {
  if (parent == nullptr) return module->forward(x);
  return parent->forward_range(std::move(x), begin, end, keep);
}

std::vector<ForwardUnit> forward_units(nn::Module& model, Split split) {
  std::vector<ForwardUnit> out;
  collect_units("", model, split, out);
  return out;
}

}  // namespace convkit::train
