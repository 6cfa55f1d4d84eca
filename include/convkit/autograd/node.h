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
