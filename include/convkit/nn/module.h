#pragma once
// nn::Module, the base of every layer and model, modelled on libtorch's.
//
// A module owns named parameters (trainable leaf tensors), named buffers
// (state that is saved but not trained, e.g. BatchNorm's running mean) and
// named child modules. Names compose with dots, so a model's parameters read
// "features.0.weight", "layer1.0.bn1.running_mean", exactly as in PyTorch.
//
// Writing your own module:
//   struct TwoLayer : nn::Module {
//     std::shared_ptr<nn::Linear> fc1, fc2;
//     TwoLayer() : Module("TwoLayer") {
//       fc1 = register_module("fc1", std::make_shared<nn::Linear>(784, 128));
//       fc2 = register_module("fc2", std::make_shared<nn::Linear>(128, 10));
//     }
//     Tensor forward(const Tensor& x) override { return (*fc2)(relu((*fc1)(x))); }
//   };
//
// Identity rule for to(): Module::to(device) and to(dtype) move every parameter
// and buffer IN PLACE. The Tensor handles keep their identity (the same
// TensorImpl); only the storage behind them is replaced. So the `weight`
// member, the entry in named_parameters(), and any optimizer holding the
// parameter all see the moved tensor, whether the optimizer was created before
// or after to(). (Optimizer state made before a move is moved lazily at the
// next step.) What does not follow a move: views or clones of a parameter
// taken before it, which keep pointing at the old storage.
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "convkit/core/tensor.h"
#include "convkit/nn/state_dict.h"

namespace convkit::nn {

class Module {
 public:
  // `name` is the type name shown by str(), e.g. "Conv2d".
  explicit Module(std::string name);
  virtual ~Module() = default;
  // A module's tensors are handles; a copy would silently share them.
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The computation. The base class has none and throws: override it, or use
  // the module only as a container of others.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  const std::string& name() const { return name_; }
  // What goes between the parentheses of this module's line in str(), e.g.
  // "3, 32, kernel_size=(3, 3), stride=(1, 1)". Empty by default.
  virtual std::string extra_repr() const { return {}; }
  // The module tree in PyTorch's repr format:
  //   Sequential(
  //     (0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
  //     (1): ReLU()
  //   )
  std::string str() const;
  // The module as data: type, options and children in the syntax of
  // convkit/nn/model_spec.h, so nn::build_module(spec()) rebuilds it (without
  // its weights). Every built-in module overrides it; the base throws, naming
  // the type, as a module of your own has no spec until you write one.
  virtual std::string spec() const;

  // ---- registration (names are non-empty, contain no '.', and are unique
  // across this module's parameters, buffers and children)

  // Makes `tensor` (a floating leaf) a parameter with requires_grad set as
  // given. Returns the same handle, so `weight = register_parameter(...)` works.
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // Saved in state_dict and moved by to(), but not returned by parameters().
  Tensor register_buffer(const std::string& name, Tensor tensor);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module: M must derive from nn::Module");
    add_child(name, module);
    return module;
  }

  // ---- traversal. Recursive by default, in registration order; a tensor
  // registered in two places (weight tying) is listed once, under its first name.
  std::vector<Tensor> parameters(bool recurse = true) const;
  StateDict named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  StateDict named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }
  // Calls fn on this module and then on every descendant, depth first.
  void apply(const std::function<void(Module&)>& fn);
  // Total number of parameter elements.
  std::int64_t parameter_count() const;

  // ---- mode (affects Dropout and BatchNorm), recursive
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // ---- placement, in place (see the identity rule above); gradients move too
  void to(Device device);
  void to(DType dtype);

  // Clears parameter gradients: undefined when set_to_none (the default, as
  // PyTorch 2), else filled with zeros.
  void zero_grad(bool set_to_none = true);

  // ---- state
  // Every parameter and buffer under its dotted name: for each module its own
  // parameters, then its buffers, then its children's, as PyTorch orders them.
  // The tensors share storage with the module's (detached handles).
  StateDict state_dict() const;
  // Copies values into the module's tensors (converting dtype and device as
  // needed). Throws Error listing every missing and unexpected key (strict) and
  // any shape mismatch; on error nothing has been modified.
  void load_state_dict(const StateDict& state, bool strict = true);

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* what) const;
  void collect(const std::string& prefix, bool recurse, bool params, bool buffers,
               StateDict& out) const;

  std::string name_;
  bool training_ = true;
  StateDict parameters_;
  StateDict buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace convkit::nn
