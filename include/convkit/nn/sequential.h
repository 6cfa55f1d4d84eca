#pragma once
// nn::Sequential: runs its children in order, each one's output feeding the next.
//   auto net = std::make_shared<nn::Sequential>();
//   net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 8, 3).padding(1)));
//   net->push_back(std::make_shared<nn::ReLU>());
// or all at once: std::make_shared<nn::Sequential>(conv, relu, pool).
// Children pushed without a name are called "0", "1", ... by position, so
// parameters read "0.weight"; push_back(name, module) gives named children
// ("conv1.weight") while keeping positional indexing.
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "convkit/nn/module.h"

namespace convkit::nn {

class Sequential : public Module {
 public:
  Sequential();
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  // std::make_shared<nn::Sequential>(conv, relu, pool): the children in
  // order, with no initializer_list to spell out (make_shared cannot forward
  // a braced list).
  template <typename... M>
    requires(sizeof...(M) > 0 && (std::is_base_of_v<Module, M> && ...))
  explicit Sequential(std::shared_ptr<M>... modules) : Sequential() {
    (push_back(std::move(modules)), ...);
  }

  template <typename M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    return register_module(std::to_string(size()), std::move(module));
  }
  template <typename M>
  std::shared_ptr<M> push_back(const std::string& name, std::shared_ptr<M> module) {
    return register_module(name, std::move(module));
  }

  std::size_t size() const { return named_children().size(); }
  bool empty() const { return size() == 0; }
  // The child at `index`; throws Error when out of range.
  std::shared_ptr<Module> operator[](std::size_t index) const;
  // The child at `index` as an M; throws Error when it is some other type.
  template <typename M>
  std::shared_ptr<M> at(std::size_t index) const {
    auto typed = std::dynamic_pointer_cast<M>((*this)[index]);
    CK_CHECK(typed != nullptr, "Sequential::at: child ", index, " is a ", (*this)[index]->name(),
             ", not the requested type");
    return typed;
  }

  Tensor forward(const Tensor& input) override;
  std::string spec() const override;

  // The steps forward takes, in order, as [begin, end) ranges of children
  // that cover them all: a BatchNorm and the ReLU after it run as one pass,
  // a ReLU followed by a MaxPool2d as the pool then the ReLU; every other
  // child is a step of its own. A profiler that times children one by one
  // times another program: time these steps instead.
  std::vector<std::pair<std::size_t, std::size_t>> steps() const;
  // Runs children [begin, end) as forward does, with the fusions that lie
  // inside the range: forward(input) is forward_range(input, 0, size(),
  // input). x is taken by value, so that a ReLU may rectify it in place
  // when no one else holds it; `keep` (the caller's input) is never written.
  Tensor forward_range(Tensor x, std::size_t begin, std::size_t end, const Tensor& keep);

 private:
  enum class StepKind { single, relu, pool_then_relu, batch_norm_relu };
  // How forward runs child i, looking no further than `end`.
  StepKind step_at(std::size_t i, std::size_t end) const;
};

}  // namespace convkit::nn
