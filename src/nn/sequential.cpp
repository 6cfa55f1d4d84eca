#include "convkit/nn/sequential.h"

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
  for (const auto& [key, child] : named_children()) x = child->forward(x);
  return x;
}

}  // namespace convkit::nn
