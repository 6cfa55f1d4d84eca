#include "convkit/nn/module.h"

#include <map>
#include <set>
#include <sstream>

#include "convkit/autograd/grad_mode.h"
#include "convkit/ops/factory.h"

namespace convkit {

Tensor find_tensor(const StateDict& dict, const std::string& name) {
  for (const auto& [key, tensor] : dict)
    if (key == name) return tensor;
  return Tensor();
}

}  // namespace convkit

namespace convkit::nn {

namespace {

// Points the handle `t` at `moved`'s storage, so every copy of the handle (the
// module's member, optimizers) sees the new placement.
void rebind(const Tensor& t, const Tensor& moved) {
  TensorImpl* impl = t.impl();
  impl->storage = moved.storage();
  impl->strides = moved.strides();
  impl->offset = moved.offset();
  impl->dtype = moved.dtype();
  impl->is_view = false;
}

// PyTorch's _addindent: indents every line after the first.
std::string indent_tail(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

Module::Module(std::string name) : name_(std::move(name)) {}

Tensor Module::forward(const Tensor&) {
  CK_FAIL(name_, ": this module defines no forward(); override forward() or call its children");
}

std::string Module::str() const {
  const std::string extra = extra_repr();
  std::vector<std::string> lines;
  std::istringstream extra_stream(extra);
  for (std::string line; std::getline(extra_stream, line);) lines.push_back(line);
  const std::size_t extra_lines = lines.size();
  for (const auto& [key, child] : children_) lines.push_back("(" + key + "): " + indent_tail(child->str()));
  std::string out = name_ + "(";
  if (extra_lines == 1 && children_.empty()) {
    out += lines[0];
  } else if (!lines.empty()) {
    out += "\n";
    for (const auto& line : lines) out += "  " + line + "\n";
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.str(); }

void Module::check_new_name(const std::string& name, const char* what) const {
  CK_CHECK(!name.empty(), name_, ".", what, ": the name must not be empty");
  CK_CHECK(name.find('.') == std::string::npos, name_, ".", what, ": the name '", name,
           "' must not contain '.' (dots separate the levels of the module tree)");
  bool taken = find_tensor(parameters_, name).defined() || find_tensor(buffers_, name).defined();
  for (const auto& child : children_) taken = taken || child.first == name;
  CK_CHECK(!taken, name_, ".", what, ": '", name, "' is already registered in this module");
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "register_parameter");
  CK_CHECK(tensor.defined(), name_, ".register_parameter: '", name, "' is an undefined tensor");
  CK_CHECK(is_floating(tensor.dtype()), name_, ".register_parameter: '", name,
           "' must be float32 or float64, got ", tensor.dtype());
  CK_CHECK(tensor.is_leaf(), name_, ".register_parameter: '", name,
           "' is the result of an operation (not a leaf); register tensor.detach() instead");
  tensor.requires_grad_(requires_grad);
  parameters_.emplace_back(name, tensor);
  return tensor;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor) {
  check_new_name(name, "register_buffer");
  CK_CHECK(tensor.defined(), name_, ".register_buffer: '", name, "' is an undefined tensor");
  CK_CHECK(!tensor.requires_grad(), name_, ".register_buffer: '", name,
           "' requires grad; buffers are not trained (register it as a parameter instead)");
  buffers_.emplace_back(name, tensor);
  return tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "register_module");
  CK_CHECK(module != nullptr, name_, ".register_module: '", name, "' is a null module");
  CK_CHECK(module.get() != this, name_, ".register_module: a module cannot contain itself");
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, bool recurse, bool params, bool bufs,
                     StateDict& out) const {
  if (params)
    for (const auto& [key, t] : parameters_) out.emplace_back(prefix + key, t);
  if (bufs)
    for (const auto& [key, t] : buffers_) out.emplace_back(prefix + key, t);
  if (!recurse) return;
  for (const auto& [key, child] : children_) child->collect(prefix + key + ".", true, params, bufs, out);
}

namespace {
StateDict unique_by_identity(StateDict all) {
  std::set<const TensorImpl*> seen;
  StateDict out;
  for (auto& entry : all)
    if (seen.insert(entry.second.impl()).second) out.push_back(std::move(entry));
  return out;
}

std::vector<Tensor> values(const StateDict& dict) {
  std::vector<Tensor> out;
  out.reserve(dict.size());
  for (const auto& entry : dict) out.push_back(entry.second);
  return out;
}
}  // namespace

StateDict Module::named_parameters(bool recurse) const {
  StateDict all;
  collect("", recurse, true, false, all);
  return unique_by_identity(std::move(all));
}

StateDict Module::named_buffers(bool recurse) const {
  StateDict all;
  collect("", recurse, false, true, all);
  return unique_by_identity(std::move(all));
}

std::vector<Tensor> Module::parameters(bool recurse) const { return values(named_parameters(recurse)); }
std::vector<Tensor> Module::buffers(bool recurse) const { return values(named_buffers(recurse)); }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& entry : children_) out.push_back(entry.second);
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  fn(*this);
  for (auto& entry : children_) entry.second->apply(fn);
}

std::int64_t Module::parameter_count() const {
  std::int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& entry : children_) entry.second->train(on);
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  StateDict all;
  collect("", true, true, true, all);
  for (const auto& [key, t] : unique_by_identity(std::move(all))) {
    if (t.device() == device) continue;
    rebind(t, t.detach().to(device));
    TensorImpl* impl = t.impl();
    if (impl->grad.defined()) impl->grad = impl->grad.to(device);
  }
}

void Module::to(DType dtype) {
  CK_CHECK(is_floating(dtype), name_, ".to: modules convert to float32 or float64, not ", dtype);
  NoGradGuard no_grad;
  StateDict all;
  collect("", true, true, true, all);
  for (const auto& [key, t] : unique_by_identity(std::move(all))) {
    // Integer buffers (counters such as num_batches_tracked) keep their type.
    if (t.dtype() == dtype || !is_floating(t.dtype())) continue;
    rebind(t, t.detach().to(dtype));
    TensorImpl* impl = t.impl();
    if (impl->grad.defined()) impl->grad = impl->grad.to(dtype);
  }
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      Tensor g = p.grad();
      g.zero_();
    }
  }
}

StateDict Module::state_dict() const {
  StateDict all;
  collect("", true, true, true, all);
  for (auto& entry : all) entry.second = entry.second.detach();
  return all;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  StateDict own;
  collect("", true, true, true, own);
  std::map<std::string, Tensor> given;
  for (const auto& [key, t] : state) {
    CK_CHECK(given.emplace(key, t).second, name_, ".load_state_dict: key '", key, "' appears twice");
    CK_CHECK(t.defined(), name_, ".load_state_dict: '", key, "' is an undefined tensor");
  }

  std::vector<std::string> missing, mismatched;
  std::set<std::string> known;
  for (const auto& [key, t] : own) {
    known.insert(key);
    auto it = given.find(key);
    if (it == given.end()) {
      missing.push_back(key);
    } else if (it->second.shape() != t.shape()) {
      mismatched.push_back(key + ": checkpoint " + it->second.shape().str() + ", model " +
                           t.shape().str());
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& [key, t] : state)
    if (!known.count(key)) unexpected.push_back(key);

  std::string problems;
  if (strict && !missing.empty()) problems += "\n  missing keys: " + join(missing);
  if (strict && !unexpected.empty()) problems += "\n  unexpected keys: " + join(unexpected);
  if (!mismatched.empty()) problems += "\n  shape mismatches: " + join(mismatched);
  CK_CHECK(problems.empty(), name_, ".load_state_dict: the state does not fit this module; nothing was loaded",
           problems);

  NoGradGuard no_grad;
  for (const auto& [key, t] : own) {
    auto it = given.find(key);
    if (it == given.end()) continue;
    Tensor target = t;
    target.copy_(it->second);
  }
}

}  // namespace convkit::nn
