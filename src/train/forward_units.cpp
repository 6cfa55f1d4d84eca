#include "train/forward_units.h"

#include <typeinfo>

#include "convkit/nn/module.h"
#include "convkit/nn/sequential.h"

namespace convkit::train {

namespace {

// A class derived from Sequential may override forward, so only the plain
// type is opened.
void collect_units(const std::string& prefix, nn::Module& module,
                   std::vector<std::pair<std::string, nn::Module*>>& out) {
  if (typeid(module) != typeid(nn::Sequential)) {
    out.emplace_back(prefix.empty() ? "(model)" : prefix, &module);
    return;
  }
  for (const auto& [name, child] : module.named_children())
    collect_units(prefix.empty() ? name : prefix + "." + name, *child, out);
}

}  // namespace

std::vector<std::pair<std::string, nn::Module*>> forward_units(nn::Module& model) {
  std::vector<std::pair<std::string, nn::Module*>> out;
  collect_units("", model, out);
  return out;
}

}  // namespace convkit::train
