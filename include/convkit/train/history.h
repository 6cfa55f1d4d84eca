#pragma once
// What fit() records: one EpochLogs per epoch (Keras' `logs` dict and
// History.history, as ordered name -> value pairs).
//
// Names written by fit():
//   loss, accuracy               training loss and accuracy over the epoch
//                                (running means, as Keras reports them)
//   val_loss, val_accuracy       on the validation loader, after the epoch
//   lr                           the first group's learning rate during the epoch
//   seconds                      wall time of the epoch's training loop
//   images_per_sec               training images / seconds
//   val_seconds                  wall time of the validation pass
//   skipped_steps                steps skipped for a NaN or Inf (only with
//                                FitOptions::nonfinite = NonFinite::skip_step)
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convkit/train/profiler.h"

namespace convkit::train {

struct EpochLogs {
  std::int64_t epoch = 0;  // 0-based
  std::vector<std::pair<std::string, double>> values;

  // Sets (or replaces) `name`, keeping first-insertion order.
  void set(const std::string& name, double value);
  bool has(const std::string& name) const;
  std::optional<double> find(const std::string& name) const;
  // Throws Error naming the metric and the ones that exist.
  double at(const std::string& name) const;
};

// Where a stop request (train::request_stop, or a signal) ended training.
struct Interruption {
  std::int64_t epoch = 0;  // 0-based: the epoch under way (its batches 0..step-1 are done)
  std::int64_t step = 0;   // steps of that epoch done; resume with initial_epoch/initial_step
  int signal = 0;          // SIGINT, SIGTERM, or 0 when request_stop() was called without one
};

struct History {
  std::vector<EpochLogs> epochs;  // finished epochs only
  // True when a callback (e.g. EarlyStopping) ended training before the last epoch.
  bool stopped_early = false;
  // Per-layer timings of the profiled epochs, when FitOptions::profile is set.
  std::optional<ProfileReport> profile;
  // Set when a stop request ended training.
  std::optional<Interruption> interrupted;
  // Steps skipped for a NaN or Inf loss or gradient (NonFinite::skip_step).
  std::int64_t skipped_steps = 0;

  // The values of `name` epoch by epoch; throws Error when some epoch lacks it.
  std::vector<double> metric(const std::string& name) const;
  // The last epoch's logs; throws Error when there is none.
  const EpochLogs& last() const;
};

// Whether larger is better for a monitored quantity.
enum class MonitorMode {
  automatic,  // max for names containing "acc" (accuracy, val_accuracy), else min (Keras' rule)
  min,
  max,
};
// True for max: resolves automatic by the name.
bool monitor_maximises(MonitorMode mode, const std::string& monitor);
// Whether `value` improves on `best` by more than min_delta (>= 0) in that direction.
bool improves(double value, double best, bool maximise, double min_delta);

}  // namespace convkit::train
