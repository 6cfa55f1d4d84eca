#pragma once
// Per-layer profile of training steps: which layers dominate training time.
//
// Forward: the model is run unit by unit, each unit's forward timed on its
// own. A unit is a step of the model's forward when the model is a plain
// nn::Sequential (nested plain Sequentials are opened too, so ResNet's
// "layer1" shows as its blocks "layer1.0", "layer1.1"); any other model is
// a single unit. A step is a child, or the children the Sequential runs
// fused (Sequential::steps): a BatchNorm and its ReLU show as one row
// "1+2" of type "BatchNorm2d+ReLU". Timing the children apart would time
// another program: the fused kernels are not the layers' own (a scalar
// loop in the fused backward once cost 15% of a step that a per-child
// profile never showed). Running the steps in turn is exactly what the
// forward does, so the profiled step computes the same thing.
//
// Backward: every autograd Node is created by one op during the forward, and
// nodes are numbered in creation order (Node::sequence). The profiler notes
// the sequence range each unit's forward created, then watches the backward
// pass (autograd::BackwardObserver) and charges the time from one node's
// start to the next node's start to the unit that created the node. That
// interval covers the node's gradient math, freeing its saved tensors and
// summing its outputs into pending gradients, so the rows add up to the whole
// backward time with nothing left over or counted twice. Nodes made after the
// last unit (the loss) are charged to "loss"; the engine's graph walk before
// the first node is charged to "autograd engine".
//
// On devices that run asynchronously (cuda) every timestamp is taken after a
// device synchronize, which makes the timings exact but the profiled step a
// little slower than an unprofiled one; on the cpu nothing changes.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "convkit/core/device.h"
#include "convkit/core/tensor.h"

namespace convkit::nn { class Module; }

namespace convkit::train {

struct ForwardUnit;

struct LayerTiming {
  std::string name;  // dotted module name ("0", "layer1.0"), or a row such as "loss"
  std::string type;  // Module::name() ("Conv2d"), or "" for the non-layer rows
  std::int64_t count = 1;  // units summed into this row (by_type)
  double forward_seconds = 0;   // summed over the profiled steps
  double backward_seconds = 0;
  double total_seconds() const { return forward_seconds + backward_seconds; }
};

struct ProfileReport {
  std::int64_t steps = 0;   // training steps profiled
  std::int64_t images = 0;  // images in those steps
  std::vector<LayerTiming> layers;  // in forward order
  LayerTiming loss{"loss", ""};
  double engine_seconds = 0;     // backward outside every node (the graph walk)
  double optimizer_seconds = 0;  // optimizer.step() and zero_grad()
  double data_seconds = 0;       // waiting for the next batch
  double total_seconds = 0;      // wall time of the profiled steps, all of the above

  // The layers summed per type (Conv2d, ReLU, ...), largest total first.
  std::vector<LayerTiming> by_type() const;
  // Two tables, milliseconds per step and share of the step time: one row per
  // layer (plus loss, optimizer, data, engine), then one per layer type.
  std::string table() const;
  // Adds another report's timings (same model): e.g. several epochs.
  void merge(const ProfileReport& other);
};

// Times training steps of one model. Use per step:
//   profiler.data_wait(seconds);           // optional
//   Tensor out = profiler.forward(images);
//   Tensor loss = profiler.loss([&] { return compute_loss(...); });
//   profiler.backward(loss);
//   profiler.optimizer([&] { opt.step(); });
//   profiler.end_step(batch_size);
class LayerProfiler {
 public:
  LayerProfiler(nn::Module& model, Device device);
  ~LayerProfiler();
  LayerProfiler(const LayerProfiler&) = delete;
  LayerProfiler& operator=(const LayerProfiler&) = delete;

  // The units the forward is split into, as (name, type): ("3", "Conv2d"), ("1+2", "BatchNorm2d+ReLU").
  std::vector<std::pair<std::string, std::string>> units() const;

  Tensor forward(const Tensor& input);
  Tensor loss(const std::function<Tensor()>& compute);
  void backward(const Tensor& loss);
  void optimizer(const std::function<void()>& step);
  void data_wait(double seconds);
  void end_step(std::int64_t images);

  const ProfileReport& report() const { return report_; }

 private:
  class Observer;
  double now() const;  // seconds, after a device sync where needed
  std::size_t row_of(std::uint64_t sequence) const;

  Device device_;
  std::vector<ForwardUnit> units_;  // complete in the .cpp, where every member that uses it is defined
  // Sequence ranges [begin, end) of the current step: one per unit, then the loss.
  std::vector<std::uint64_t> range_begin_;
  std::uint64_t loss_end_ = 0;
  double step_start_ = -1;
  ProfileReport report_;
  std::unique_ptr<Observer> observer_;
};

}  // namespace convkit::train
