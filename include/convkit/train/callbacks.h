#pragma once
// Callbacks: code fit() runs at the start and end of training, of each epoch
// and of each batch, as Keras' callbacks. The ones here log to CSV, save
// checkpoints, stop early and step learning-rate schedulers; derive from
// Callback for your own.
//
//   auto best = std::make_shared<train::ModelCheckpoint>(
//       train::ModelCheckpointOptions{.directory = "run", .monitor = "val_accuracy"});
//   options.callbacks = {std::make_shared<train::CSVLogger>("run/log.csv"), best,
//                        std::make_shared<train::EarlyStopping>(
//                            train::EarlyStoppingOptions{.monitor = "val_loss", .patience = 3})};
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convkit/io/checkpoint.h"
#include "convkit/nn/state_dict.h"
#include "convkit/train/history.h"

namespace convkit::nn { class Module; }
namespace convkit::optim { class Optimizer; class LRScheduler; }
namespace convkit::data { class Preprocessing; }

namespace convkit::train {

// What callbacks see of the run.
struct TrainContext {
  nn::Module& model;
  optim::Optimizer& optimizer;
  // The training loader's preprocessing, which checkpoints store for predict.
  const data::Preprocessing& preprocessing;
  // Epochs finished so far; at on_epoch_end it includes the epoch just ended.
  const History& history;
  std::int64_t epochs = 0;  // the last epoch fit() will run is epochs - 1
  // Set by a callback to end training after the current epoch.
  bool stop_training = false;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(TrainContext&) {}
  virtual void on_epoch_begin(std::int64_t /*epoch*/, TrainContext&) {}
  // After each optimizer step; step counts from 0 within the epoch.
  virtual void on_batch_end(std::int64_t /*step*/, TrainContext&) {}
  // After the epoch's training and validation; `logs` is history.epochs.back().
  virtual void on_epoch_end(std::int64_t /*epoch*/, const EpochLogs& /*logs*/, TrainContext&) {}
  // A stop request (a signal) ended training after `steps_done` steps of
  // `epoch`; on_train_end follows. Save what resuming needs here.
  virtual void on_train_interrupted(std::int64_t /*epoch*/, std::int64_t /*steps_done*/,
                                    TrainContext&) {}
  virtual void on_train_end(TrainContext&) {}
};

// Appends one row per epoch to a CSV file: "epoch" (1-based, as printed) and
// every value in the epoch's logs, columns fixed by the first row written.
// The file is flushed after every row, so a crash keeps every finished epoch.
// It is created with its first row, so a run stopped before its first epoch
// ends leaves no empty file behind.
// append: keep an existing file's rows (its header is not written again).
class CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string path, bool append = false);
  void on_train_begin(TrainContext&) override;
  void on_epoch_end(std::int64_t epoch, const EpochLogs& logs, TrainContext&) override;
  void on_train_end(TrainContext&) override;

 private:
  void open();

  std::string path_;
  bool append_;
  bool began_ = false;
  std::ofstream file_;
  std::vector<std::string> columns_;  // empty until the header is known
};

// Appends one JSON object per epoch to a file (JSON Lines): {"epoch": 1-based,
// then every value in the epoch's logs}, flushed after each, as CSVLogger
// does; non-finite values are written as null. scripts/plot_history.py turns
// the file into loss and accuracy curves. append: keep an existing file's lines.
class JsonLinesLogger : public Callback {
 public:
  explicit JsonLinesLogger(std::string path, bool append = false);
  void on_train_begin(TrainContext&) override;
  void on_epoch_end(std::int64_t epoch, const EpochLogs& logs, TrainContext&) override;

 private:
  std::string path_;
  bool append_;
};

struct ModelCheckpointOptions {
  std::string directory;             // created if missing
  std::string monitor = "val_loss";  // a name in the epoch logs
  MonitorMode mode = MonitorMode::automatic;
  double min_delta = 0;
  bool save_last = true;   // <directory>/last.ckpt after every epoch
  bool save_best = true;   // <directory>/best.ckpt when `monitor` improves
  bool include_optimizer = true;  // so training can resume from the file
  io::Metadata metadata;   // added to every checkpoint (e.g. {"zoo", "fmnist-cnn"})
  // Continuing a run in `directory`: the best value so far is the one its
  // best.ckpt recorded, so a resumed run replaces best.ckpt only when it does
  // better. Without this, a new run starts with no best (and so overwrites
  // best.ckpt after its first epoch).
  bool resume = false;
};

// Saves checkpoints (io::save_checkpoint: atomic, so a crash mid-write keeps
// the previous file) holding the model, optimizer, preprocessing, the number
// of epochs done and the epoch's logs as metadata "logs.<name>". A monitored
// name missing from the logs is an Error naming the ones present.
// When a stop request interrupts training, last.ckpt is saved (whatever
// save_last says) with Checkpoint::epoch the epochs done, Checkpoint::step
// the steps done of the next one, and metadata "interrupted" = "true": what
// FitOptions::initial_epoch and initial_step resume from. With `resume`, a
// best.ckpt already in the directory must monitor the same metric (an Error
// names both otherwise), and its value and epoch become best() and best_epoch().
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(ModelCheckpointOptions options);
  void on_train_begin(TrainContext&) override;
  void on_epoch_end(std::int64_t epoch, const EpochLogs& logs, TrainContext& context) override;
  void on_train_interrupted(std::int64_t epoch, std::int64_t steps_done,
                            TrainContext& context) override;

  std::string last_path() const;
  std::string best_path() const;
  std::optional<double> best() const { return best_; }
  std::optional<std::int64_t> best_epoch() const { return best_epoch_; }

 private:
  io::Checkpoint checkpoint(std::int64_t epochs_done, TrainContext& context) const;
  void restore_best();

  ModelCheckpointOptions options_;
  std::optional<double> best_;
  std::optional<std::int64_t> best_epoch_;
};

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  MonitorMode mode = MonitorMode::automatic;
  std::int64_t patience = 0;  // epochs without improvement tolerated before stopping
  double min_delta = 0;       // smaller changes are not improvements
  // At the end of training, put back the weights (parameters and buffers) of
  // the best epoch when a later epoch was worse.
  bool restore_best_weights = false;
};

// Stops training once `monitor` has not improved for `patience` epochs in a
// row, as Keras' EarlyStopping (patience 0 and 1 both stop at the first epoch
// that does not improve).
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);
  void on_train_begin(TrainContext&) override;
  void on_epoch_end(std::int64_t epoch, const EpochLogs& logs, TrainContext& context) override;
  void on_train_end(TrainContext& context) override;

  std::optional<std::int64_t> stopped_epoch() const { return stopped_epoch_; }
  std::optional<std::int64_t> best_epoch() const { return best_epoch_; }

 private:
  EarlyStoppingOptions options_;
  std::optional<double> best_;
  std::optional<std::int64_t> best_epoch_, stopped_epoch_, last_epoch_;
  std::int64_t wait_ = 0;
  StateDict best_weights_;  // clones, when restore_best_weights
};

// Steps a learning-rate scheduler at the end of every epoch, so epoch e
// trains with lr_at(base, e). fit() logs the rate each epoch used as "lr".
class LRSchedulerCallback : public Callback {
 public:
  explicit LRSchedulerCallback(std::shared_ptr<optim::LRScheduler> scheduler);
  void on_epoch_end(std::int64_t epoch, const EpochLogs& logs, TrainContext& context) override;
  optim::LRScheduler& scheduler() { return *scheduler_; }

 private:
  std::shared_ptr<optim::LRScheduler> scheduler_;
};

}  // namespace convkit::train
