#include "convkit/autograd/node.h"

#include <atomic>

#include "convkit/autograd/grad_mode.h"

namespace convkit::autograd {

namespace {
std::atomic<std::uint64_t> g_next_sequence{0};
std::atomic<std::uint64_t> g_next_hook_handle{1};
}

Node::Node(std::string name) : name_(std::move(name)), sequence_(g_next_sequence++) {}

std::uint64_t next_node_sequence() { return g_next_sequence.load(); }

SavedTensor::SavedTensor(const Tensor& t)
    : tensor_(t), version_(t.defined() ? t.storage()->version() : 0) {}

const Tensor& SavedTensor::get() const {
  CK_CHECK(!tensor_.defined() || tensor_.storage()->version() == version_,
           "autograd: a tensor of shape ", tensor_.shape(),
           " needed for the gradient was modified by an in-place operation after it was saved "
           "(its version is now ", tensor_.storage()->version(), ", expected ", version_,
           "); use an out-of-place op or clone() before modifying it");
  return tensor_;
}

std::vector<Tensor> FunctionNode::apply(const Tensor& grad_output) {
  CK_CHECK(fn_ != nullptr, "autograd: trying to run backward through ", name(),
           " a second time, but its saved tensors were freed after the first backward; "
           "pass retain_graph=true to the first backward if you need to do this");
  return fn_(grad_output);
}

AccumulateGrad::AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf)
    : Node("AccumulateGrad"), leaf_(leaf) {}

std::vector<Tensor> AccumulateGrad::apply(const Tensor& grad_output) {
  auto leaf = leaf_.lock();
  if (!leaf) return {};
  if (!leaf->grad.defined()) {
    // The grad must own its buffer, since later steps accumulate into it in
    // place. The engine moves each pending gradient into the call, so when
    // its handle is the only one on the tensor and no view shares the
    // storage, nothing else can see it (a layer's fresh weight gradient):
    // keep it, as PyTorch does, instead of copying 5 MB per step for
    // cifar10-cnn's dense layer. Otherwise (a gradient passed through to two
    // leaves, a view, the caller's own `grad`) own a copy.
    if (exclusively_owned(grad_output)) {
      leaf->grad = grad_output;
    } else {
      leaf->grad = grad_output.contiguous().same(grad_output) ? grad_output.clone() : grad_output.contiguous();
    }
  } else {
    leaf->grad.add_(grad_output);
  }
  if (!leaf->post_accumulate_grad_hooks.empty()) {
    const Tensor handle(leaf);
    // A hook may remove hooks (its own included): run a copy of the list.
    const auto hooks = leaf->post_accumulate_grad_hooks;
    for (const auto& entry : hooks) entry.second(handle);
  }
  return {};
}

std::uint64_t register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook) {
  CK_CHECK(leaf.defined(), "register_post_accumulate_grad_hook: the tensor is undefined");
  CK_CHECK(leaf.requires_grad() && leaf.is_leaf(), "register_post_accumulate_grad_hook: the tensor of shape ",
           leaf.shape(), " is not a leaf that requires grad (no gradient is accumulated into it)");
  CK_CHECK(hook != nullptr, "register_post_accumulate_grad_hook: the hook is empty");
  const std::uint64_t handle = g_next_hook_handle++;
  leaf.impl()->post_accumulate_grad_hooks.emplace_back(handle, std::move(hook));
  return handle;
}

void remove_post_accumulate_grad_hook(const Tensor& leaf, std::uint64_t handle) {
  if (!leaf.defined()) return;
  auto& hooks = leaf.impl()->post_accumulate_grad_hooks;
  std::erase_if(hooks, [handle](const auto& entry) { return entry.first == handle; });
}

bool exclusively_owned(const Tensor& grad) {
  return grad.defined() && grad.impl_ptr().use_count() == 1 && grad.storage().use_count() == 1 &&
         !grad.requires_grad() && grad.is_contiguous();
}

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

std::shared_ptr<Node> gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return nullptr;
  if (t.grad_fn()) return t.grad_fn();
  TensorImpl* impl = t.impl();
  auto acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    impl->grad_accumulator = acc;
  }
  return acc;
}

Tensor& record(Tensor& out, const char* name, const std::vector<Tensor>& inputs,
               FunctionNode::Backward backward) {
  if (!needs_grad(inputs)) return out;
  auto node = std::make_shared<FunctionNode>(name, std::move(backward));
  node->next.reserve(inputs.size());
  for (const Tensor& in : inputs) node->next.push_back(gradient_edge(in));
  out.impl()->grad_fn = std::move(node);
  out.impl()->requires_grad = true;
  return out;
}

}  // namespace convkit::autograd
