#pragma once
// Batch normalisation modules, wrapping convkit::batch_norm, with PyTorch's
// options and state:
//   parameters (affine):            weight [C] (ones), bias [C] (zeros)
//   buffers (track_running_stats):  running_mean [C] (zeros), running_var [C] (ones),
//                                   num_batches_tracked (int64 scalar)
// Training mode normalises with the batch statistics and updates the running
// ones: running = (1 - momentum) running + momentum batch (unbiased batch
// variance). With momentum unset (cumulative_average()), the factor is
// 1 / num_batches_tracked, a plain average over all batches seen. Eval mode
// normalises with the running statistics (batch statistics when not tracked).
//
// With a statistics reducer set (set_stats_reducer; dist::convert_sync_batchnorm
// sets one), training mode normalises with the statistics of the batches of
// every rank together (SyncBatchNorm), in forward and backward.
#include <cstdint>
#include <memory>
#include <optional>

#include "convkit/nn/batch_stats_reducer.h"
#include "convkit/nn/module.h"

namespace convkit::nn {

struct BatchNormOptions {
  explicit BatchNormOptions(std::int64_t num_features) : num_features_(num_features) {}
  BatchNormOptions& eps(double e) { eps_ = e; return *this; }
  BatchNormOptions& momentum(double m) { momentum_ = m; return *this; }
  BatchNormOptions& cumulative_average() { momentum_.reset(); return *this; }
  BatchNormOptions& affine(bool a) { affine_ = a; return *this; }
  BatchNormOptions& track_running_stats(bool t) { track_running_stats_ = t; return *this; }

  std::int64_t num_features_;
  double eps_ = 1e-5;
  std::optional<double> momentum_ = 0.1;
  bool affine_ = true;
  bool track_running_stats_ = true;
};

// Shared by BatchNorm1d and BatchNorm2d, which differ only in the input ranks they accept.
class BatchNormBase : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) in one pass (batch_norm_relu): what Sequential runs for
  // this layer when a ReLU follows it.
  Tensor forward_relu(const Tensor& x);
  // relu(forward(x) + residual) in one pass (batch_norm_add_relu): the end of
  // a ResNet block. residual has x's shape.
  Tensor forward_add_relu(const Tensor& x, const Tensor& residual);
  std::string extra_repr() const override;
  std::string spec() const override;
  void reset_running_stats();
  void reset_parameters();
  const BatchNormOptions& options() const { return options_; }
  // Shares training-mode batch statistics across ranks through `reducer`
  // (null: per-rank statistics, the default). Eval mode is unaffected.
  void set_stats_reducer(std::shared_ptr<BatchStatsReducer> reducer) { stats_reducer_ = std::move(reducer); }
  const std::shared_ptr<BatchStatsReducer>& stats_reducer() const { return stats_reducer_; }

  Tensor weight, bias;                                      // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;    // undefined unless tracked

 protected:
  BatchNormBase(std::string name, const BatchNormOptions& options);
  // Throws when x has a rank this layer does not accept.
  virtual void check_input(const Tensor& x) const = 0;

 private:
  // relu: batch_norm_relu; relu with a defined residual: batch_norm_add_relu.
  Tensor normalise(const Tensor& x, bool relu, const Tensor& residual = Tensor());
  // Training mode with a stats reducer: composed of differentiable ops around
  // two reductions over the ranks, with ReLU and the residual unfused
  // (src/nn/batchnorm_synced.cpp). x and residual are [N, C] or [N, C, H, W].
  Tensor normalise_synced(const Tensor& x, bool relu, const Tensor& residual, double momentum);
  // Momentum for this training step; bumps num_batches_tracked.
  double next_momentum();

  BatchNormOptions options_;
  std::shared_ptr<BatchStatsReducer> stats_reducer_;
  // Host copy of num_batches_tracked, so a training step needs no device read;
  // re-read whenever the buffer's storage changed under us (load_state_dict, to()).
  std::int64_t batches_seen_ = 0;
  std::weak_ptr<Storage> seen_storage_;
  std::uint64_t seen_version_ = 0;
};

// Input [N, C] or [N, C, L].
class BatchNorm1d : public BatchNormBase {
 public:
  explicit BatchNorm1d(const BatchNormOptions& options) : BatchNormBase("BatchNorm1d", options) {}
  explicit BatchNorm1d(std::int64_t num_features) : BatchNorm1d(BatchNormOptions(num_features)) {}

 protected:
  void check_input(const Tensor& x) const override;
};

// Input [N, C, H, W].
class BatchNorm2d : public BatchNormBase {
 public:
  explicit BatchNorm2d(const BatchNormOptions& options) : BatchNormBase("BatchNorm2d", options) {}
  explicit BatchNorm2d(std::int64_t num_features) : BatchNorm2d(BatchNormOptions(num_features)) {}

 protected:
  void check_input(const Tensor& x) const override;
};

}  // namespace convkit::nn
