#include "convkit/train/callbacks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "convkit/autograd/grad_mode.h"
#include "convkit/core/error.h"
#include "convkit/nn/module.h"
#include "convkit/optim/lr_scheduler.h"
#include "convkit/optim/optimizer.h"
#include "io/json.h"

namespace convkit::train {

namespace {

std::string format_value(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

double monitored(const EpochLogs& logs, const std::string& monitor, const char* who) {
  if (auto v = logs.find(monitor)) return *v;
  std::string known;
  for (const auto& [key, v] : logs.values) known += (known.empty() ? "" : ", ") + key;
  CK_FAIL(who, ": the monitored metric '", monitor, "' is not in the epoch's logs (they hold: ",
          known, "); monitoring a val_ metric needs validation data");
}

}  // namespace

// ---- CSVLogger

CSVLogger::CSVLogger(std::string path, bool append) : path_(std::move(path)), append_(append) {
  CK_CHECK(!path_.empty(), "CSVLogger: empty path");
}

void CSVLogger::on_train_begin(TrainContext&) {
  file_.close();
  columns_.clear();
  began_ = true;
  // A new log replaces an old one now, not at its first row, so a run
  // stopped before then does not leave the previous run's rows behind.
  std::error_code ignored;
  if (!append_) std::filesystem::remove(path_, ignored);
}

void CSVLogger::open() {
  const bool had_rows = append_ && std::filesystem::exists(path_) &&
                        std::filesystem::file_size(path_) > 0;
  file_.open(path_, append_ ? std::ios::app : std::ios::trunc);
  CK_CHECK(file_.is_open(), "CSVLogger: cannot open '", path_, "' for writing: ",
           std::strerror(errno));
  if (had_rows) {
    // Continue with the existing header's columns.
    std::ifstream in(path_);
    std::string header;
    std::getline(in, header);
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = header.find(',', start);
      columns_.push_back(header.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
}

void CSVLogger::on_epoch_end(std::int64_t epoch, const EpochLogs& logs, TrainContext&) {
  CK_CHECK(began_, "CSVLogger: on_epoch_end before on_train_begin");
  if (!file_.is_open()) open();
  if (columns_.empty()) {
    columns_.push_back("epoch");
    for (const auto& [name, value] : logs.values) columns_.push_back(name);
    std::string header;
    for (std::size_t i = 0; i < columns_.size(); ++i) header += (i ? "," : "") + columns_[i];
    file_ << header << '\n';
  }
  std::string row;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (i) row += ',';
    if (columns_[i] == "epoch") row += std::to_string(epoch + 1);
    else if (auto v = logs.find(columns_[i])) row += format_value(*v);
  }
  file_ << row << '\n';
  file_.flush();
  CK_CHECK(file_.good(), "CSVLogger: writing '", path_, "' failed: ", std::strerror(errno));
}

void CSVLogger::on_train_end(TrainContext&) {
  file_.close();
  began_ = false;
}

// ---- JsonLinesLogger

JsonLinesLogger::JsonLinesLogger(std::string path, bool append) : path_(std::move(path)), append_(append) {
  CK_CHECK(!path_.empty(), "JsonLinesLogger: empty path");
}

void JsonLinesLogger::on_train_begin(TrainContext&) {
  std::error_code ignored;  // as CSVLogger: the old log goes now, the new one comes with its first line
  if (!append_) std::filesystem::remove(path_, ignored);
}

void JsonLinesLogger::on_epoch_end(std::int64_t epoch, const EpochLogs& logs, TrainContext&) {
  std::string line = "{\"epoch\": " + std::to_string(epoch + 1);
  for (const auto& [name, value] : logs.values) {
    line += ", ";
    line += io::json::quote(name);
    line += ": ";
    line += std::isfinite(value) ? format_value(value) : "null";
  }
  line += "}\n";
  std::ofstream file(path_, std::ios::app);
  CK_CHECK(file.is_open(), "JsonLinesLogger: cannot open '", path_, "' for writing: ", std::strerror(errno));
  file << line;
  file.flush();
  CK_CHECK(file.good(), "JsonLinesLogger: writing '", path_, "' failed: ", std::strerror(errno));
}

// ---- ModelCheckpoint

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options) : options_(std::move(options)) {
  CK_CHECK(!options_.directory.empty(), "ModelCheckpoint: empty directory");
  CK_CHECK(options_.save_last || options_.save_best,
           "ModelCheckpoint: save_last and save_best are both off, so nothing would be saved");
  CK_CHECK(options_.min_delta >= 0, "ModelCheckpoint: min_delta must be >= 0, got ",
           options_.min_delta);
}

std::string ModelCheckpoint::last_path() const {
  return (std::filesystem::path(options_.directory) / "last.ckpt").string();
}
std::string ModelCheckpoint::best_path() const {
  return (std::filesystem::path(options_.directory) / "best.ckpt").string();
}

void ModelCheckpoint::on_train_begin(TrainContext&) {
  std::error_code ec;
  std::filesystem::create_directories(options_.directory, ec);
  CK_CHECK(!ec, "ModelCheckpoint: cannot create directory '", options_.directory, "': ",
           ec.message());
  if (options_.resume && options_.save_best && std::filesystem::exists(best_path())) restore_best();
}

void ModelCheckpoint::restore_best() {
  const io::Checkpoint ck = io::load_checkpoint(best_path());
  const std::string where = "ModelCheckpoint: resuming from " + best_path();
  const std::optional<std::string> monitor = ck.get_metadata("monitor");
  CK_CHECK(monitor, where, ": it has no 'monitor' metadata, so its best value is unknown");
  CK_CHECK(*monitor == options_.monitor, where, ": it monitors '", *monitor, "', this run monitors '",
           options_.monitor, "'");
  const std::optional<std::string> text = ck.get_metadata("logs." + options_.monitor);
  CK_CHECK(text, where, ": it has no 'logs.", options_.monitor, "' metadata");
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  CK_CHECK(!text->empty() && *end == '\0', where, ": 'logs.", options_.monitor, "' is '", *text,
           "', not a number");
  CK_CHECK(ck.epoch >= 1, where, ": it records ", ck.epoch, " epochs done; a best epoch has at least 1");
  best_ = value;
  best_epoch_ = ck.epoch - 1;
}

void ModelCheckpoint::on_epoch_end(std::int64_t epoch, const EpochLogs& logs,
                                   TrainContext& context) {
  bool is_best = false;
  if (options_.save_best) {
    const double value = monitored(logs, options_.monitor, "ModelCheckpoint");
    const bool maximise = monitor_maximises(options_.mode, options_.monitor);
    if (!best_ || improves(value, *best_, maximise, options_.min_delta)) {
      best_ = value;
      best_epoch_ = epoch;
      is_best = true;
    }
  }
  if (!options_.save_last && !is_best) return;

  io::Checkpoint ck = checkpoint(epoch + 1, context);
  for (const auto& [name, value] : logs.values) ck.set_metadata("logs." + name, format_value(value));
  if (options_.save_last) io::save_checkpoint(last_path(), ck);
  if (is_best) {
    ck.set_metadata("monitor", options_.monitor);
    io::save_checkpoint(best_path(), ck);
  }
}

io::Checkpoint ModelCheckpoint::checkpoint(std::int64_t epochs_done, TrainContext& context) const {
  io::Checkpoint ck = io::make_checkpoint(
      context.model, options_.include_optimizer ? &context.optimizer : nullptr, context.preprocessing);
  ck.epoch = epochs_done;
  for (const auto& [key, value] : options_.metadata) ck.set_metadata(key, value);
  return ck;
}

void ModelCheckpoint::on_train_interrupted(std::int64_t epoch, std::int64_t steps_done,
                                           TrainContext& context) {
  io::Checkpoint ck = checkpoint(epoch, context);
  ck.step = steps_done;
  ck.set_metadata("interrupted", "true");
  io::save_checkpoint(last_path(), ck);
}

// ---- EarlyStopping

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  CK_CHECK(options_.patience >= 0, "EarlyStopping: patience must be >= 0, got ",
           options_.patience);
  CK_CHECK(options_.min_delta >= 0, "EarlyStopping: min_delta must be >= 0, got ",
           options_.min_delta);
}

void EarlyStopping::on_train_begin(TrainContext&) {
  best_.reset();
  best_epoch_.reset();
  stopped_epoch_.reset();
  last_epoch_.reset();
  wait_ = 0;
  best_weights_.clear();
}

void EarlyStopping::on_epoch_end(std::int64_t epoch, const EpochLogs& logs,
                                 TrainContext& context) {
  last_epoch_ = epoch;
  const double value = monitored(logs, options_.monitor, "EarlyStopping");
  const bool maximise = monitor_maximises(options_.mode, options_.monitor);
  if (!best_ || improves(value, *best_, maximise, options_.min_delta)) {
    best_ = value;
    best_epoch_ = epoch;
    wait_ = 0;
    if (options_.restore_best_weights) {
      NoGradGuard no_grad;
      best_weights_.clear();
      for (const auto& [name, tensor] : context.model.state_dict())
        best_weights_.emplace_back(name, tensor.clone());
    }
    return;
  }
  if (++wait_ >= options_.patience) {
    stopped_epoch_ = epoch;
    context.stop_training = true;
  }
}

void EarlyStopping::on_train_end(TrainContext& context) {
  if (!options_.restore_best_weights || best_weights_.empty() || best_epoch_ == last_epoch_) return;
  context.model.load_state_dict(best_weights_);
}

// ---- LRSchedulerCallback

LRSchedulerCallback::LRSchedulerCallback(std::shared_ptr<optim::LRScheduler> scheduler)
    : scheduler_(std::move(scheduler)) {
  CK_CHECK(scheduler_ != nullptr, "LRSchedulerCallback: null scheduler");
}

void LRSchedulerCallback::on_epoch_end(std::int64_t, const EpochLogs&, TrainContext&) {
  scheduler_->step();
}

}  // namespace convkit::train
