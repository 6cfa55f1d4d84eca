#pragma once
// The reverse-mode graph. Every differentiable op that sees an input with
// requires_grad creates one Node holding what its backward needs, and points
// at the nodes of its inputs (`next`). Leaves get an AccumulateGrad node that
// adds into tensor.grad().
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit::autograd {

class Node {
 public:
  explicit Node(std::string name);
  virtual ~Node() = default;
  // Gradients w.r.t. each input, given the gradient of the output. An entry
  // may be undefined when that input needs no gradient.
  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  // Frees saved tensors after a backward without retain_graph.
  virtual void release() {}

  const std::string& name() const { return name_; }
  std::uint64_t sequence() const { return sequence_; }  // creation order
  // One entry per differentiable input; null where the input needs no grad.
  std::vector<std::shared_ptr<Node>> next;

 private:
  std::string name_;
  std::uint64_t sequence_;
};

// A tensor saved for backward, with the storage version at save time so an
// in-place write before backward is caught instead of giving wrong gradients.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  // Throws Error when the tensor was modified in place since it was saved.
  const Tensor& get() const;
  bool defined() const { return tensor_.defined(); }

 private:
  Tensor tensor_;
  std::uint64_t version_ = 0;
  std::string node_name_;
};

// The backward of most ops is a closure over SavedTensors; releasing the
// node destroys the closure and, with it, the saved buffers.
class FunctionNode : public Node {
 public:
  using Backward = std::function<std::vector<Tensor>(const Tensor& grad_output)>;
  FunctionNode(std::string name, Backward fn) : Node(std::move(name)), fn_(std::move(fn)) {}
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  void release() override { fn_ = nullptr; }

 private:
  Backward fn_;
};

class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf);
  std::vector<Tensor> apply(const Tensor& grad_output) override;

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

// True when grad mode is on and any input requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);
// True when `grad`, as a backward function receives it, is contiguous, is
// the engine's only handle on its tensor, and no view shares its storage:
// nothing else can see it, so the function may overwrite it elementwise
// instead of allocating its result (the engine moves each pending gradient
// into the call). False for a gradient that is still pending for another
// node, that a node has saved, that the caller passed to backward, or that
// is an expanded view (several elements on one address).
bool exclusively_owned(const Tensor& grad);
// Where a gradient for `t` must flow: its grad_fn, its accumulator, or null.
std::shared_ptr<Node> gradient_edge(const Tensor& t);
// Makes `out` the output of a FunctionNode over `inputs` when any of them
// requires grad (and grad mode is on). Returns `out` for chaining.
Tensor& record(Tensor& out, const char* name, const std::vector<Tensor>& inputs,
               FunctionNode::Backward backward);

// Runs backward from `root` seeded with `grad`.
void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph);

// A function run with the leaf (a handle on it) right after a backward pass
// has accumulated into leaf.grad(), as PyTorch's
// Tensor.register_post_accumulate_grad_hook: the place to act on a finished
// gradient while the rest of backward still runs (DistributedDataParallel
// starts its all-reduces there). It runs on the thread running backward,
// under no-grad, at most once per pass (the engine sums a leaf's incoming
// gradients before accumulating), and not in a pass that gives the leaf no
// gradient.
using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;
// Registers `hook` on `leaf` (a leaf that requires grad) until removed; it
// survives between backward passes. Returns the handle that removes it.
std::uint64_t register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);
// Removes the hook with this handle; a handle that is not there is ignored,
// so an owner may remove its hooks after the user already did.
void remove_post_accumulate_grad_hook(const Tensor& leaf, std::uint64_t handle);

// Queues `fn` to run once when the backward pass running on this thread
// finishes, after every node (PyTorch's Variable._execution_engine.queue_callback).
// Callbacks run in the order queued, including those queued by a callback;
// a pass that throws drops its queue. Throws Error when no backward is running
// on this thread. Declared with the graph, defined by the engine that runs it.
void queue_callback(std::function<void()> fn);

// Watches every node a backward pass runs, e.g. to time layers
// (convkit/train/profiler.h). Called on the thread running backward, just
// before and just after Node::apply; one per thread, none by default.
class BackwardObserver {
 public:
  virtual ~BackwardObserver() = default;
  virtual void before_node(const Node& node) = 0;
  virtual void after_node(const Node& node) = 0;
};
// Installs `observer` (or null) for backward passes run by this thread and
// returns the one it replaces.
BackwardObserver* set_backward_observer(BackwardObserver* observer);
// The sequence() the next Node will get: nodes created between two calls
// were created by the code that ran between them (on a single thread).
std::uint64_t next_node_sequence();

}  // namespace convkit::autograd
