#include "convkit/train/profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <typeinfo>

#include "convkit/autograd/node.h"
#include "convkit/backend/backend.h"
#include "convkit/core/error.h"
#include "convkit/nn/module.h"
#include "train/forward_units.h"

namespace convkit::train {

namespace {

std::string row_line(const std::string& name, const std::string& type, const LayerTiming& t,
                     double steps, double step_ms) {
  const double fwd = 1e3 * t.forward_seconds / steps, bwd = 1e3 * t.backward_seconds / steps;
  const double share = step_ms > 0 ? 100.0 * (fwd + bwd) / step_ms : 0.0;
  char line[256];
  std::snprintf(line, sizeof line, "%-22s %-18s %10.3f %10.3f %10.3f %6.1f%%\n", name.c_str(),
                type.c_str(), fwd, bwd, fwd + bwd, share);
  return line;
}

}  // namespace

// Charges each node's interval (its start to the next node's start) to its row.
class LayerProfiler::Observer : public autograd::BackwardObserver {
 public:
  explicit Observer(LayerProfiler& owner) : owner_(owner) {}

  void begin() {
    started_ = owner_.now();
    last_ = started_;
    current_ = kNone;
  }
  void before_node(const autograd::Node& node) override {
    const double t = owner_.now();
    charge(t);
    current_ = owner_.row_of(node.sequence());
    last_ = t;
  }
  void after_node(const autograd::Node&) override {}
  void end() { charge(owner_.now()); }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  void charge(double t) {
    const double dt = t - last_;
    ProfileReport& r = owner_.report_;
    if (current_ == kNone) r.engine_seconds += dt;
    else if (current_ < r.layers.size()) r.layers[current_].backward_seconds += dt;
    else r.loss.backward_seconds += dt;
  }

  LayerProfiler& owner_;
  double started_ = 0, last_ = 0;
  std::size_t current_ = kNone;
};

LayerProfiler::LayerProfiler(nn::Module& model, Device device)
    : device_(device), observer_(std::make_unique<Observer>(*this)) {
  units_ = forward_units(model, Split::as_run);
  CK_CHECK(!units_.empty(), "LayerProfiler: the model is an empty Sequential");
  for (const ForwardUnit& u : units_) report_.layers.push_back({u.name, u.type});
  range_begin_.assign(units_.size() + 1, 0);
}

LayerProfiler::~LayerProfiler() = default;

std::vector<std::pair<std::string, std::string>> LayerProfiler::units() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ForwardUnit& u : units_) out.emplace_back(u.name, u.type);
  return out;
}

double LayerProfiler::now() const {
  if (device_.type != DeviceType::cpu) backend_for(device_).synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::size_t LayerProfiler::row_of(std::uint64_t sequence) const {
  // range_begin_ = [unit 0 begin, ..., unit n-1 begin, loss begin], ascending.
  if (sequence < range_begin_.front() || sequence >= loss_end_) return static_cast<std::size_t>(-1);
  auto it = std::upper_bound(range_begin_.begin(), range_begin_.end(), sequence);
  return static_cast<std::size_t>(it - range_begin_.begin()) - 1;  // == units_.size(): the loss
}

Tensor LayerProfiler::forward(const Tensor& input) {
  double t = now();
  if (step_start_ < 0) step_start_ = t;
  Tensor x = input;
  for (std::size_t i = 0; i < units_.size(); ++i) {
    range_begin_[i] = autograd::next_node_sequence();
    x = units_[i].run(std::move(x), input);
    const double t2 = now();
    report_.layers[i].forward_seconds += t2 - t;
    t = t2;
  }
  // Until loss() narrows it, everything made after the last unit is the loss's.
  range_begin_.back() = autograd::next_node_sequence();
  loss_end_ = static_cast<std::uint64_t>(-1);
  return x;
}

Tensor LayerProfiler::loss(const std::function<Tensor()>& compute) {
  const double t = now();
  range_begin_.back() = autograd::next_node_sequence();
  Tensor out = compute();
  loss_end_ = autograd::next_node_sequence();
  report_.loss.forward_seconds += now() - t;
  return out;
}

void LayerProfiler::backward(const Tensor& loss) {
  autograd::BackwardObserver* previous = autograd::set_backward_observer(observer_.get());
  observer_->begin();
  try {
    loss.backward();
  } catch (...) {
    autograd::set_backward_observer(previous);
    throw;
  }
  observer_->end();
  autograd::set_backward_observer(previous);
}

void LayerProfiler::optimizer(const std::function<void()>& step) {
  const double t = now();
  step();
  report_.optimizer_seconds += now() - t;
}

void LayerProfiler::data_wait(double seconds) {
  report_.data_seconds += seconds;
  report_.total_seconds += seconds;
}

void LayerProfiler::end_step(std::int64_t images) {
  CK_CHECK(step_start_ >= 0, "LayerProfiler::end_step: no forward was profiled in this step");
  report_.total_seconds += now() - step_start_;
  step_start_ = -1;
  report_.steps += 1;
  report_.images += images;
}

std::vector<LayerTiming> ProfileReport::by_type() const {
  std::vector<LayerTiming> out;
  std::map<std::string, std::size_t> index;
  for (const LayerTiming& l : layers) {
    auto [it, fresh] = index.emplace(l.type, out.size());
    if (fresh) {
      out.push_back({l.type, l.type, 0, 0, 0});
    }
    LayerTiming& row = out[it->second];
    row.count += 1;
    row.forward_seconds += l.forward_seconds;
    row.backward_seconds += l.backward_seconds;
  }
  std::stable_sort(out.begin(), out.end(), [](const LayerTiming& a, const LayerTiming& b) {
    return a.total_seconds() > b.total_seconds();
  });
  return out;
}

void ProfileReport::merge(const ProfileReport& other) {
  CK_CHECK(layers.size() == other.layers.size(),
           "ProfileReport::merge: reports of different models (", layers.size(), " and ",
           other.layers.size(), " layers)");
  steps += other.steps;
  images += other.images;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    layers[i].forward_seconds += other.layers[i].forward_seconds;
    layers[i].backward_seconds += other.layers[i].backward_seconds;
  }
  loss.forward_seconds += other.loss.forward_seconds;
  loss.backward_seconds += other.loss.backward_seconds;
  engine_seconds += other.engine_seconds;
  optimizer_seconds += other.optimizer_seconds;
  data_seconds += other.data_seconds;
  total_seconds += other.total_seconds;
}

std::string ProfileReport::table() const {
  if (steps == 0) return "profile: no training step was profiled\n";
  const double n = static_cast<double>(steps);
  const double step_ms = 1e3 * total_seconds / n;
  char head[256];
  std::string out;
  std::snprintf(head, sizeof head,
                "profile: %lld steps, %lld images, %.3f ms/step, %.1f images/s\n",
                static_cast<long long>(steps), static_cast<long long>(images), step_ms,
                total_seconds > 0 ? static_cast<double>(images) / total_seconds : 0.0);
  out += head;
  std::snprintf(head, sizeof head, "%-22s %-18s %10s %10s %10s %7s\n", "layer", "type",
                "fwd ms", "bwd ms", "total ms", "share");
  const std::string header = head;
  out += header;
  double accounted = 0;
  for (const LayerTiming& l : layers) {
    out += row_line(l.name, l.type, l, n, step_ms);
    accounted += l.total_seconds();
  }
  out += row_line("loss", "", loss, n, step_ms);
  accounted += loss.total_seconds();
  auto single = [&](const char* name, double seconds, bool backward) {
    LayerTiming t{name, ""};
    (backward ? t.backward_seconds : t.forward_seconds) = seconds;
    out += row_line(name, "", t, n, step_ms);
    accounted += seconds;
  };
  single("autograd engine", engine_seconds, true);
  single("optimizer", optimizer_seconds, false);
  single("data wait", data_seconds, false);
  single("other", std::max(0.0, total_seconds - accounted), false);

  out += "\nby layer type:\n";
  std::snprintf(head, sizeof head, "%-22s %-18s %10s %10s %10s %7s\n", "type", "layers",
                "fwd ms", "bwd ms", "total ms", "share");
  out += head;
  for (const LayerTiming& t : by_type())
    out += row_line(t.type, std::to_string(t.count), t, n, step_ms);
  return out;
}

}  // namespace convkit::train
