// Runs that survive faults: a stop request (a signal) ends fit at the end of
// a step with a checkpoint that resumes the run bit for bit; a NaN or Inf in
// a step is named (step, layer, tensor) or skipped and counted.
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <limits>

#include "convkit/train/stop_signal.h"
#include "train_fixtures.h"

namespace convkit {
namespace {

using testing::loader_options;
using testing::quadrant_dataset;
using testing::quiet;
using testing::small_cnn;
using testing::TempDir;

// Requests a stop, as a signal would, once `at` steps of epoch `epoch` are done.
struct StopAt : train::Callback {
  std::int64_t epoch, at;
  std::int64_t current = -1;
  StopAt(std::int64_t e, std::int64_t s) : epoch(e), at(s) {}
  void on_epoch_begin(std::int64_t e, train::TrainContext&) override { current = e; }
  void on_batch_end(std::int64_t step, train::TrainContext&) override {
    if (current == epoch && step + 1 == at) train::request_stop(SIGTERM);
  }
};

std::vector<float> flat_weights(const nn::Module& model) {
  std::vector<float> out;
  for (const auto& [name, t] : model.state_dict()) {
    const Tensor c = t.to(kCPU).contiguous();
    out.insert(out.end(), c.data<float>(), c.data<float>() + c.numel());
  }
  return out;
}

TEST(Interrupt, StopsAtTheEndOfTheStepAndSavesAResumableCheckpoint) {
  TempDir dir;
  const auto dataset = quadrant_dataset(40, 4, 1);  // 5 batches of 8
  auto run = [&](const std::vector<std::shared_ptr<train::Callback>>& extra,
                 std::shared_ptr<nn::Module> model, optim::Optimizer& opt, std::int64_t epoch0,
                 std::int64_t step0) {
    data::DataLoader loader(dataset, loader_options(8));
    train::FitOptions o = quiet(3);
    o.initial_epoch = epoch0;
    o.initial_step = step0;
    o.callbacks = extra;
    return train::fit(*model, opt, loader, o);
  };

  // The run never interrupted.
  manual_seed(5);
  auto whole = small_cnn(4);
  optim::Adam whole_opt(whole->parameters(), optim::AdamOptions(1e-2));
  run({}, whole, whole_opt, 0, 0);

  // Stopped after step 2 of epoch 2: no row for the partial epoch, last.ckpt
  // records where it stopped.
  manual_seed(5);
  auto first = small_cnn(4);
  optim::Adam first_opt(first->parameters(), optim::AdamOptions(1e-2));
  train::ModelCheckpointOptions ck_options;
  ck_options.directory = dir.path();
  ck_options.monitor = "loss";
  const train::History h =
      run({std::make_shared<train::CSVLogger>(dir.file("log.csv")),
           std::make_shared<train::ModelCheckpoint>(ck_options), std::make_shared<StopAt>(1, 2)},
          first, first_opt, 0, 0);
  ASSERT_TRUE(h.interrupted.has_value());
  EXPECT_EQ(h.interrupted->epoch, 1);
  EXPECT_EQ(h.interrupted->step, 2);
  EXPECT_EQ(h.interrupted->signal, SIGTERM);
  EXPECT_EQ(h.epochs.size(), 1u);
  std::ifstream log(dir.file("log.csv"));
  std::string line;
  int rows = 0;
  while (std::getline(log, line)) ++rows;
  EXPECT_EQ(rows, 2);  // header + epoch 1, flushed

  const io::Checkpoint ck = io::load_checkpoint(dir.file("last.ckpt"));
  EXPECT_EQ(ck.epoch, 1);
  EXPECT_EQ(ck.step, 2);
  EXPECT_EQ(ck.get_metadata("interrupted"), "true");

  // Resumed into fresh objects: the same weights, bit for bit.
  auto resumed = io::build_model(ck);
  auto resumed_opt = io::build_optimizer(ck, *resumed);
  io::restore_generator(ck);
  const train::History rest = run({}, resumed, *resumed_opt, ck.epoch, ck.step);
  EXPECT_FALSE(rest.interrupted.has_value());
  EXPECT_EQ(rest.epochs.size(), 2u);
  EXPECT_EQ(flat_weights(*resumed), flat_weights(*whole));
}

TEST(Interrupt, AStaleRequestDoesNotEndTheNextRun) {
  train::request_stop(SIGINT);
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(16, 4, 1), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  const train::History h = train::fit(*model, opt, loader, quiet(2));
  EXPECT_FALSE(h.interrupted.has_value());
  EXPECT_EQ(h.epochs.size(), 2u);
}

TEST(Interrupt, InitialStepIsChecked) {
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(16, 4, 1), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  train::FitOptions o = quiet(1);
  o.initial_step = 2;
  EXPECT_ERROR_MENTIONS(train::fit(*model, opt, loader, o), "initial_step must be in [0, 2)");
}

// The first signal asks for a stop and the process goes on; the second ends
// it by the signal's default action. Run in a child, which the signal kills.
TEST(SignalStopGuardDeathTest, SecondSignalExitsAtOnce) {
  EXPECT_EXIT(
      {
        train::SignalStopGuard guard;
        train::clear_stop_request();
        std::raise(SIGINT);
        if (!train::stop_requested() || train::stop_signal() != SIGINT) std::_Exit(3);
        std::raise(SIGINT);
        std::_Exit(4);  // not reached
      },
      ::testing::KilledBySignal(SIGINT), "stopping at the end of this step");
}

TEST(SignalStopGuard, RestoresThePreviousHandlers) {
  struct sigaction before {};
  sigaction(SIGTERM, nullptr, &before);
  {
    train::SignalStopGuard guard;
    struct sigaction during {};
    sigaction(SIGTERM, nullptr, &during);
    EXPECT_NE(during.sa_handler, before.sa_handler);
  }
  struct sigaction after {};
  sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

// A run stopped before its first epoch ends leaves no log file (an empty one
// would read as a run that logged nothing).
TEST(CSVLogger, NoEmptyFileWhenNoEpochEnded) {
  TempDir dir;
  const std::string path = dir.file("log.csv");
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(16, 4, 1), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  train::FitOptions o = quiet(2);
  o.callbacks = {std::make_shared<train::CSVLogger>(path), std::make_shared<StopAt>(0, 1)};
  const train::History h = train::fit(*model, opt, loader, o);
  ASSERT_TRUE(h.interrupted.has_value());
  EXPECT_FALSE(std::filesystem::exists(path));
}

// ---- NaN and Inf

// Multiplies its input by `factor` from step `from` of the run on.
struct Spike : nn::Module {
  double factor;
  int from;
  int calls = 0;
  Spike(double f, int s) : Module("Spike"), factor(f), from(s) {}
  Tensor forward(const Tensor& x) override { return calls++ >= from ? x * factor : x; }
};

std::shared_ptr<nn::Sequential> spiked_cnn(double factor, int from) {
  auto net = small_cnn(4);
  auto spiked = std::make_shared<nn::Sequential>();
  const auto& children = net->named_children();
  spiked->push_back(children[0].second);
  spiked->push_back(children[1].second);
  spiked->push_back(std::make_shared<Spike>(factor, from));
  for (std::size_t i = 2; i < children.size(); ++i) spiked->push_back(children[i].second);
  return spiked;
}

TEST(NonFinite, ErrorNamesTheStepTheLayerAndTheTensor) {
  manual_seed(2);
  auto model = spiked_cnn(std::numeric_limits<double>::infinity(), 3);
  data::DataLoader loader(quadrant_dataset(32, 4, 1), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  // Step 4 of epoch 1 is the spike's fourth call.
  EXPECT_ERROR_MENTIONS(train::fit(*model, opt, loader, quiet(1)), "epoch 1, step 4",
                        "output of layer '2' (Spike)", "Inf of");
}

TEST(NonFinite, AGradientAloneIsNamedToo) {
  // A finite forward whose backward is not: x + sqrt(0 * x) is x, but the
  // derivative of sqrt at 0 is Inf, and 0 * Inf is NaN.
  struct HugeGrad : nn::Module {
    HugeGrad() : Module("HugeGrad") {}
    Tensor forward(const Tensor& x) override { return x + sqrt(x * 0.0); }
  };
  manual_seed(2);
  auto net = small_cnn(4);
  auto model = std::make_shared<nn::Sequential>();
  for (const auto& [name, child] : net->named_children()) model->push_back(child);
  model->push_back(std::make_shared<HugeGrad>());
  data::DataLoader loader(quadrant_dataset(16, 4, 1), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  EXPECT_ERROR_MENTIONS(train::fit(*model, opt, loader, quiet(1)), "epoch 1, step 1",
                        "the gradient of 'weight' in layer '0'");
}

TEST(NonFinite, SkipStepCountsAndLeavesTheWeightsAlone) {
  manual_seed(2);
  auto model = spiked_cnn(std::numeric_limits<double>::quiet_NaN(), 6);
  data::DataLoader loader(quadrant_dataset(32, 4, 1), loader_options(8));  // 4 steps an epoch
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05));
  train::FitOptions o = quiet(2);
  o.nonfinite = train::NonFinite::skip_step;
  struct Snapshot : train::Callback {
    std::vector<float> after_step_6;
    void on_batch_end(std::int64_t step, train::TrainContext& c) override {
      if (step == 1) after_step_6 = flat_weights(c.model);  // epoch 2, step 2 = call 6
    }
  };
  auto snapshot = std::make_shared<Snapshot>();
  o.callbacks = {snapshot};
  const train::History h = train::fit(*model, opt, loader, o);
  EXPECT_EQ(h.skipped_steps, 2);  // calls 6 and 7 (epoch 2, steps 3 and 4)
  EXPECT_EQ(h.epochs[0].at("skipped_steps"), 0);
  EXPECT_EQ(h.epochs[1].at("skipped_steps"), 2);
  EXPECT_TRUE(std::isfinite(h.epochs[1].at("loss")));  // the skipped losses are left out
  EXPECT_EQ(flat_weights(*model), snapshot->after_step_6);
}

// ---- A corrupt file found mid-epoch by a loader worker

int thread_count() {
  return static_cast<int>(std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                        std::filesystem::directory_iterator()));
}

TEST(LoaderFault, CorruptFileMidEpochNamesThePathAndShutsDownCleanly) {
  TempDir dir;
  // 2 classes x 12 gray 8x8 PNGs; one file of class b is cut short inside its
  // pixel data (the IEND chunk and IDAT's CRC gone). Its header is sound, so
  // indexing the folder passes it (a bad header fails there, before training:
  // tests/data/image_folder_test.cpp) and only decoding finds the fault.
  for (const char* cls : {"a", "b"}) {
    std::filesystem::create_directories(dir.file(cls));
    for (int i = 0; i < 12; ++i) {
      testing::Bytes px(64, static_cast<std::uint8_t>(cls[0] == 'a' ? 40 : 200));
      testing::write_bytes(dir.file(std::string(cls) + "/img" + std::to_string(i) + ".png"),
                           testing::png_bytes(8, 8, 1, px));
    }
  }
  const std::string corrupt = dir.file("b/img7.png");
  testing::Bytes cut = testing::read_bytes(corrupt);
  cut.resize(cut.size() - 16);
  testing::write_bytes(corrupt, cut);

  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Flatten>());
  model->push_back(std::make_shared<nn::Linear>(3 * 8 * 8, 2));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  // A first run without workers starts whatever threads training itself
  // keeps (OpenMP's), so that the count below is the loader's alone.
  data::DataLoader warm_up(std::make_shared<data::TensorDataset>(
                               zeros({8, 3, 8, 8}), zeros({8}, DType::int64), 2),
                           loader_options(4));
  train::fit(*model, opt, warm_up, quiet(1));

  const int threads_before = thread_count();
  const auto start = std::chrono::steady_clock::now();
  {
    auto folder = std::make_shared<data::ImageFolder>(dir.path());
    data::DataLoaderOptions lo = loader_options(4, /*shuffle=*/false);
    lo.workers = 3;
    data::DataLoader loader(folder, lo);
    // Unshuffled, in sorted path order (img0, img1, img10, img11, img2, ...):
    // b/img7.png is example 12 + 9 = 21, in the sixth batch of 4.
    EXPECT_ERROR_MENTIONS(train::fit(*model, opt, loader, quiet(2)), "fit: epoch 1, step 6",
                          corrupt);
    EXPECT_GT(thread_count(), threads_before);  // the workers, until the loader goes
  }
  EXPECT_EQ(thread_count(), threads_before);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
}

}  // namespace
}  // namespace convkit
