// Callbacks: CSV logging (flushed per epoch, append mode), checkpoints of the
// last and best epochs, early stopping (patience, min_delta, restoring the
// best weights) and learning-rate schedules.
#include <filesystem>
#include <fstream>

#include "io/json.h"
#include "train_fixtures.h"

namespace convkit {
namespace {

using testing::loader_options;
using testing::quadrant_dataset;
using testing::quiet;
using testing::small_cnn;
using testing::TempDir;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Records what a file holds at the end of each epoch (after the callbacks before it).
struct FileWatcher : train::Callback {
  std::string path;
  std::vector<std::size_t> lines_seen;
  explicit FileWatcher(std::string p) : path(std::move(p)) {}
  void on_epoch_end(std::int64_t, const train::EpochLogs&, train::TrainContext&) override {
    lines_seen.push_back(read_lines(path).size());
  }
};

TEST(CSVLogger, OneFlushedRowPerEpochAndAppend) {
  TempDir dir;
  const std::string path = dir.file("log.csv");
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(16, 4, 1), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  auto watcher = std::make_shared<FileWatcher>(path);
  train::FitOptions o = quiet(3);
  o.callbacks = {std::make_shared<train::CSVLogger>(path), watcher};
  const train::History h = train::fit(*model, opt, loader, o);
  EXPECT_EQ(watcher->lines_seen, (std::vector<std::size_t>{2, 3, 4}));  // header + rows, flushed
  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "epoch,loss,accuracy,lr,seconds,images_per_sec");
  EXPECT_EQ(lines[2].substr(0, 2), "2,");
  EXPECT_NEAR(std::stod(lines[3].substr(2)), h.epochs[2].at("loss"), 1e-12);

  o.callbacks = {std::make_shared<train::CSVLogger>(path, /*append=*/true)};
  o.epochs = 1;
  train::fit(*model, opt, loader, o);
  lines = read_lines(path);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[4].substr(0, 2), "1,");

  o.callbacks = {std::make_shared<train::CSVLogger>(path)};  // truncates
  train::fit(*model, opt, loader, o);
  EXPECT_EQ(read_lines(path).size(), 2u);
  EXPECT_THROW(train::CSVLogger(""), Error);
  o.callbacks = {std::make_shared<train::CSVLogger>(dir.file("no/such/dir/log.csv"))};
  EXPECT_ERROR_MENTIONS(train::fit(*model, opt, loader, o), "cannot open");
}

TEST(JsonLinesLogger, OneParseableObjectPerEpoch) {
  TempDir dir;
  const std::string path = dir.file("log.jsonl");
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(16, 4, 1), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  train::FitOptions o = quiet(2);
  o.callbacks = {std::make_shared<train::JsonLinesLogger>(path)};
  const train::History h = train::fit(*model, opt, loader, o);
  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) {
    const io::json::Value v = io::json::parse(lines[e], "log line");
    EXPECT_EQ(v.find("epoch")->text, std::to_string(e + 1));
    EXPECT_EQ(std::stod(v.find("loss")->text), h.epochs[e].at("loss"));  // %.17g round-trips
    EXPECT_EQ(std::stod(v.find("accuracy")->text), h.epochs[e].at("accuracy"));
  }
  o.epochs = 1;
  o.callbacks = {std::make_shared<train::JsonLinesLogger>(path, /*append=*/true)};
  train::fit(*model, opt, loader, o);
  EXPECT_EQ(read_lines(path).size(), 3u);
  o.callbacks = {std::make_shared<train::JsonLinesLogger>(path)};  // starts afresh
  train::fit(*model, opt, loader, o);
  EXPECT_EQ(read_lines(path).size(), 1u);
}

TEST(ModelCheckpoint, SavesLastAndBestWithPreprocessing) {
  TempDir dir;
  manual_seed(4);
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(64, 4, 1), loader_options(16));
  data::DataLoader val(quadrant_dataset(32, 4, 2), loader_options(16, false));
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.01));
  train::ModelCheckpointOptions co;
  co.directory = dir.file("ckpts");
  co.monitor = "val_accuracy";
  co.metadata = {{"zoo", "none"}};
  auto ck = std::make_shared<train::ModelCheckpoint>(co);
  train::FitOptions o = quiet(4);
  o.validation = &val;
  o.callbacks = {ck};
  const train::History h = train::fit(*model, opt, loader, o);

  // best = the first epoch reaching the highest val_accuracy (strictly better only).
  const auto acc = h.metric("val_accuracy");
  std::size_t best = 0;
  for (std::size_t i = 1; i < acc.size(); ++i)
    if (acc[i] > acc[best]) best = i;
  ASSERT_TRUE(ck->best_epoch().has_value());
  EXPECT_EQ(*ck->best_epoch(), static_cast<std::int64_t>(best));

  const io::Checkpoint last = io::load_checkpoint(ck->last_path());
  EXPECT_EQ(last.epoch, 4);
  ASSERT_TRUE(last.preprocessing.has_value());
  EXPECT_EQ(*last.preprocessing, testing::unit_scale());
  EXPECT_EQ(last.get_metadata("zoo"), "none");
  EXPECT_FALSE(last.optimizer_spec.empty());
  // The last checkpoint is the final model, bit for bit.
  const StateDict live = model->state_dict();
  ASSERT_EQ(last.model_state.size(), live.size());
  for (std::size_t i = 0; i < live.size(); ++i)
    EXPECT_EQ(last.model_state[i].second.to_vector<float>(), live[i].second.to_vector<float>())
        << live[i].first;

  const io::Checkpoint best_ck = io::load_checkpoint(ck->best_path());
  EXPECT_EQ(best_ck.epoch, static_cast<std::int64_t>(best) + 1);
  EXPECT_EQ(best_ck.get_metadata("monitor"), "val_accuracy");
  EXPECT_NEAR(std::stod(*best_ck.get_metadata("logs.val_accuracy")), acc[best], 1e-15);

  // Monitoring a metric that is not logged is an error naming it.
  co.monitor = "val_loss";
  o.validation = nullptr;
  o.callbacks = {std::make_shared<train::ModelCheckpoint>(co)};
  EXPECT_ERROR_MENTIONS(train::fit(*model, opt, loader, o), "'val_loss'", "needs validation data");
}

// A resumed run keeps the best value its best.ckpt recorded: a worse epoch
// after --resume must not replace the best checkpoint, as it would in a new run.
TEST(ModelCheckpoint, ResumeKeepsTheRecordedBest) {
  TempDir dir;
  auto model = small_cnn(2);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
  data::Preprocessing pre = testing::unit_scale();
  train::History history;
  train::TrainContext context{*model, opt, pre, history, 100};
  const auto epoch_logs = [](std::int64_t epoch, double acc) {
    train::EpochLogs logs;
    logs.epoch = epoch;
    logs.set("val_accuracy", acc);
    return logs;
  };
  train::ModelCheckpointOptions co;
  co.directory = dir.file("run");
  co.monitor = "val_accuracy";
  {
    train::ModelCheckpoint first(co);
    first.on_train_begin(context);
    first.on_epoch_end(0, epoch_logs(0, 0.5), context);
    first.on_epoch_end(1, epoch_logs(1, 0.75), context);
    first.on_epoch_end(2, epoch_logs(2, 0.625), context);
  }
  const auto best_epochs_done = [&] { return io::load_checkpoint(dir.file("run/best.ckpt")).epoch; };
  ASSERT_EQ(best_epochs_done(), 2);

  co.resume = true;
  train::ModelCheckpoint resumed(co);
  resumed.on_train_begin(context);
  ASSERT_TRUE(resumed.best().has_value());
  EXPECT_EQ(*resumed.best(), 0.75);
  EXPECT_EQ(resumed.best_epoch(), 1);
  resumed.on_epoch_end(3, epoch_logs(3, 0.7), context);
  EXPECT_EQ(best_epochs_done(), 2);  // 0.7 < 0.75: kept
  resumed.on_epoch_end(4, epoch_logs(4, 0.8), context);
  EXPECT_EQ(best_epochs_done(), 5);
  EXPECT_EQ(resumed.best_epoch(), 4);

  co.resume = false;  // a new run in the same directory starts afresh
  train::ModelCheckpoint fresh(co);
  fresh.on_train_begin(context);
  EXPECT_FALSE(fresh.best().has_value());
  fresh.on_epoch_end(0, epoch_logs(0, 0.1), context);
  EXPECT_EQ(best_epochs_done(), 1);

  co.resume = true;
  co.monitor = "val_loss";
  train::ModelCheckpoint other(co);
  EXPECT_ERROR_MENTIONS(other.on_train_begin(context), "best.ckpt", "monitors 'val_accuracy'",
                        "this run monitors 'val_loss'");
}

// Drives EarlyStopping with given values, as fit would.
struct EarlyStoppingRun {
  std::shared_ptr<nn::Sequential> model = small_cnn(2);
  optim::SGD opt{model->parameters(), optim::SGDOptions(0.1)};
  data::Preprocessing pre = testing::unit_scale();
  train::History history;
  train::TrainContext context{*model, opt, pre, history, 100};

  // Returns the epoch at which training stopped, or -1.
  std::int64_t run(train::EarlyStopping& es, const std::string& name, const std::vector<double>& values) {
    es.on_train_begin(context);
    for (std::size_t e = 0; e < values.size(); ++e) {
      // Each epoch leaves its own weights: all equal to the epoch number.
      for (Tensor p : model->parameters()) p.detach().fill_(static_cast<double>(e));
      train::EpochLogs logs;
      logs.epoch = static_cast<std::int64_t>(e);
      logs.set(name, values[e]);
      history.epochs.push_back(logs);
      es.on_epoch_end(logs.epoch, history.epochs.back(), context);
      if (context.stop_training) {
        es.on_train_end(context);
        return logs.epoch;
      }
    }
    es.on_train_end(context);
    return -1;
  }
};

TEST(EarlyStopping, PatienceMinDeltaAndModes) {
  {
    EarlyStoppingRun r;
    train::EarlyStopping es({"val_loss", train::MonitorMode::automatic, 2, 0.0, false});
    EXPECT_EQ(r.run(es, "val_loss", {1.0, 0.8, 0.85, 0.9, 0.7}), 3);  // 2 epochs without improving
    EXPECT_EQ(es.best_epoch(), 1);
  }
  {
    EarlyStoppingRun r;
    train::EarlyStopping es({"val_loss", train::MonitorMode::automatic, 2, 0.0, false});
    EXPECT_EQ(r.run(es, "val_loss", {1.0, 0.9, 0.95, 0.8, 0.85, 0.7}), -1);  // never 2 in a row
  }
  {
    EarlyStoppingRun r;  // 0.79 is not better than 0.8 by more than 0.05
    train::EarlyStopping es({"val_loss", train::MonitorMode::automatic, 1, 0.05, false});
    EXPECT_EQ(r.run(es, "val_loss", {0.8, 0.79}), 1);
  }
  {
    EarlyStoppingRun r;  // "accuracy" is maximised; patience 0 stops at the first setback
    train::EarlyStopping es({"val_accuracy", train::MonitorMode::automatic, 0, 0.0, false});
    EXPECT_EQ(r.run(es, "val_accuracy", {0.5, 0.6, 0.6}), 2);
  }
  {
    EarlyStoppingRun r;  // explicit max mode on a name without "acc"
    train::EarlyStopping es({"score", train::MonitorMode::max, 1, 0.0, false});
    EXPECT_EQ(r.run(es, "score", {1.0, 2.0, 1.5}), 2);
  }
  EXPECT_THROW(train::EarlyStopping({"val_loss", train::MonitorMode::automatic, -1, 0.0, false}), Error);
}

TEST(EarlyStopping, RestoresTheBestWeights) {
  EarlyStoppingRun r;
  train::EarlyStopping es({"val_loss", train::MonitorMode::automatic, 2, 0.0, true});
  EXPECT_EQ(r.run(es, "val_loss", {1.0, 0.5, 0.7, 0.9}), 3);
  for (const Tensor& p : r.model->parameters())
    for (float v : p.to_vector<float>()) ASSERT_EQ(v, 1.0f);  // epoch 1's weights
}

TEST(EarlyStopping, StopsFit) {
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(16, 4, 1), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(1e-30));  // loss never improves
  train::FitOptions o = quiet(10);
  o.callbacks = {std::make_shared<train::EarlyStopping>(
      train::EarlyStoppingOptions{"loss", train::MonitorMode::automatic, 2, 1e-3, false})};
  const train::History h = train::fit(*model, opt, loader, o);
  EXPECT_EQ(h.epochs.size(), 3u);
  EXPECT_TRUE(h.stopped_early);
}

TEST(LRSchedulerCallback, StepsPerEpochAndLogsTheRateUsed) {
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(16, 4, 1), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
  train::FitOptions o = quiet(3);
  o.callbacks = {std::make_shared<train::LRSchedulerCallback>(
      std::make_shared<optim::StepLR>(opt, 1, 0.5))};
  const train::History h = train::fit(*model, opt, loader, o);
  const auto lr = h.metric("lr");
  ASSERT_EQ(lr.size(), 3u);
  EXPECT_DOUBLE_EQ(lr[0], 0.1);
  EXPECT_DOUBLE_EQ(lr[1], 0.05);
  EXPECT_DOUBLE_EQ(lr[2], 0.025);
  EXPECT_DOUBLE_EQ(*opt.param_groups()[0].lr, 0.0125);
}

}  // namespace
}  // namespace convkit
