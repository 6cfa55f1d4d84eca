// Backward pass: a topological walk of the graph from the root. Gradients for
// a node are summed until every edge into it has delivered, then the node
// runs. Ready nodes run newest first, as PyTorch's engine does.
#include <functional>
#include <queue>
#include "core/op_scope.h"
#include <unordered_map>
#include <unordered_set>

#include "convkit/autograd/grad_mode.h"
#include "convkit/autograd/node.h"
#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"

namespace convkit::autograd {

namespace {
thread_local BackwardObserver* t_observer = nullptr;
// The callbacks of the backward pass running on this thread; null outside
// one. A backward run from inside a node or a callback gets its own queue.
thread_local std::vector<std::function<void()>>* t_callbacks = nullptr;

class CallbackQueueScope {
 public:
  CallbackQueueScope() : previous_(t_callbacks) { t_callbacks = &queue_; }
  ~CallbackQueueScope() { t_callbacks = previous_; }
  CallbackQueueScope(const CallbackQueueScope&) = delete;
  CallbackQueueScope& operator=(const CallbackQueueScope&) = delete;
  // Index loop: a callback may queue more.
  void run() {
    for (std::size_t i = 0; i < queue_.size(); ++i) {
      std::function<void()> fn = std::move(queue_[i]);
      fn();
    }
    queue_.clear();
  }

 private:
  std::vector<std::function<void()>> queue_;
  std::vector<std::function<void()>>* previous_;
};
}  // namespace

void queue_callback(std::function<void()> fn) {
  CK_CHECK(t_callbacks != nullptr,
           "queue_callback: no backward pass is running on this thread (call it from a hook or a "
           "node's backward)");
  CK_CHECK(fn != nullptr, "queue_callback: the callback is empty");
  t_callbacks->push_back(std::move(fn));
}

BackwardObserver* set_backward_observer(BackwardObserver* observer) {
  BackwardObserver* previous = t_observer;
  t_observer = observer;
  return previous;
}

void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  CK_CHECK(root.requires_grad(), "backward: the tensor of shape ", root.shape(),
           " does not require grad and has no grad_fn");
  CK_CHECK(grad.shape() == root.shape(), "backward: gradient of shape ", grad.shape(),
           " does not match the tensor's shape ", root.shape());
  NoGradGuard no_grad;
  CallbackQueueScope callbacks;
  std::shared_ptr<Node> start = gradient_edge(root);

  // Count the edges into each node.
  std::unordered_map<Node*, int> dependencies;
  std::vector<Node*> stack{start.get()};
  std::unordered_set<Node*> seen{start.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const auto& next : n->next) {
      if (!next) continue;
      ++dependencies[next.get()];
      if (seen.insert(next.get()).second) stack.push_back(next.get());
    }
  }

  auto newer_first = [](Node* a, Node* b) { return a->sequence() < b->sequence(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(newer_first)> ready(newer_first);
  std::unordered_map<Node*, Tensor> pending;
  pending[start.get()] = grad;
  ready.push(start.get());
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    // A node that received no gradient still runs its bookkeeping so that the
    // nodes below it can become ready through their other inputs.
    std::vector<Tensor> grads;
    if (auto it = pending.find(n); it != pending.end()) {
      Tensor g = std::move(it->second);
      pending.erase(it);
      if (t_observer) t_observer->before_node(*n);
      const detail::OpScope op_scope(n->name().c_str());
      grads = n->apply(g);
      if (t_observer) t_observer->after_node(*n);
    }
    if (!retain_graph) n->release();
    for (std::size_t i = 0; i < n->next.size(); ++i) {
      Node* next = n->next[i].get();
      if (!next) continue;
      if (i < grads.size() && grads[i].defined()) {
        Tensor& slot = pending[next];
        slot = slot.defined() ? add(slot, grads[i]) : grads[i];
      }
      if (--dependencies[next] == 0) ready.push(next);
    }
  }
  callbacks.run();
}

}  // namespace convkit::autograd

namespace convkit {

// Declared in convkit/core/tensor.h; defined here because it runs the engine,
// which sits above core and ops.
void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  Tensor seed = gradient;
  if (!seed.defined()) {
    CK_CHECK(numel() == 1, "backward: a gradient must be given for a non-scalar tensor of shape ",
             shape(), " (backward() without arguments needs exactly one element)");
    seed = ones(shape(), TensorOptions().dtype(dtype()).device(device()));
  }
  autograd::run_backward(*this, seed, retain_graph);
}

}  // namespace convkit
