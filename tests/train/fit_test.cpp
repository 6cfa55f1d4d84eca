// fit / evaluate / predict: learning on a small problem on every device,
// exact epoch means, modes, validation, progress output and argument errors.
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

#include "train_fixtures.h"

namespace convkit {
namespace {

using testing::loader_options;
using testing::quadrant_dataset;
using testing::quiet;
using testing::small_cnn;

class FitDevices : public ::testing::TestWithParam<Device> {};

TEST_P(FitDevices, LearnsAndReportsEveryMetric) {
  manual_seed(11);
  auto model = small_cnn(4);
  data::DataLoader train_loader(quadrant_dataset(96, 4, 1), loader_options(16));
  data::DataLoader val_loader(quadrant_dataset(40, 4, 2), loader_options(16, false));
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.02));
  train::FitOptions o = quiet(6);
  o.device = GetParam();
  o.validation = &val_loader;
  const train::History h = train::fit(*model, opt, train_loader, o);

  ASSERT_EQ(h.epochs.size(), 6u);
  EXPECT_FALSE(h.stopped_early);
  std::vector<std::string> names;
  for (const auto& [name, v] : h.epochs[0].values) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"loss", "accuracy", "val_loss", "val_accuracy",
                                             "val_seconds", "lr", "seconds", "images_per_sec"}));
  const auto loss = h.metric("loss");
  EXPECT_LT(loss.back(), 0.5 * loss.front());
  EXPECT_GE(h.last().at("val_accuracy"), 0.9);
  EXPECT_GT(h.last().at("images_per_sec"), 0);
  EXPECT_EQ(model->parameters().front().device(), GetParam());
  EXPECT_TRUE(model->is_training());

  // evaluate gives the same figures as the last validation pass.
  const train::EvalResult r = train::evaluate(*model, val_loader);
  EXPECT_EQ(r.examples, 40);
  EXPECT_NEAR(r.loss, h.last().at("val_loss"), 1e-6);
  EXPECT_NEAR(r.accuracy, h.last().at("val_accuracy"), 1e-12);
  EXPECT_TRUE(model->is_training());  // mode restored
}

INSTANTIATE_TEST_SUITE_P(Devices, FitDevices, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_name);

// With a learning rate too small to move the weights, the epoch's logged
// loss and accuracy are exactly evaluate()'s: means over examples, with a
// short last batch weighted by its size.
TEST(Fit, EpochMetricsAreMeansOverExamples) {
  manual_seed(5);
  auto model = small_cnn(3);
  auto data = quadrant_dataset(50, 3, 4);  // batches of 16, 16, 16, 2
  data::DataLoader loader(data, loader_options(16));
  data::DataLoader eval_loader(data, loader_options(7, false));
  const train::EvalResult before = train::evaluate(*model, eval_loader);
  optim::SGD opt(model->parameters(), optim::SGDOptions(1e-30));
  const train::History h = train::fit(*model, opt, loader, quiet(1));
  EXPECT_NEAR(h.last().at("loss"), before.loss, 1e-6);
  EXPECT_NEAR(h.last().at("accuracy"), before.accuracy, 1e-12);
}

TEST(Fit, BinaryModelUsesBinaryCrossEntropy) {
  manual_seed(2);
  auto model = small_cnn(1);
  data::DataLoader loader(quadrant_dataset(64, 2, 6), loader_options(16));
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.02));
  const train::History h = train::fit(*model, opt, loader, quiet(8));
  EXPECT_GE(h.last().at("accuracy"), 0.9);
  train::FitOptions wrong = quiet(1);
  wrong.loss = train::LossKind::cross_entropy;
  EXPECT_THROW(train::fit(*model, opt, loader, wrong), Error);
}

TEST(Fit, StepsPerEpochAndInitialEpoch) {
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(64, 4, 7), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  train::FitOptions o = quiet(4);
  o.initial_epoch = 2;
  o.steps_per_epoch = 3;
  o.profile = true;
  const train::History h = train::fit(*model, opt, loader, o);
  ASSERT_EQ(h.epochs.size(), 2u);
  EXPECT_EQ(h.epochs[0].epoch, 2);
  EXPECT_EQ(h.epochs[1].epoch, 3);
  ASSERT_TRUE(h.profile.has_value());
  EXPECT_EQ(h.profile->steps, 6);
  EXPECT_EQ(h.profile->images, 48);
}

// Records whether the training thread flushes denormals at every step.
struct DenormalModeWatcher : train::Callback {
  std::vector<bool> seen;
  void on_batch_end(std::int64_t, train::TrainContext&) override { seen.push_back(flush_denormal_enabled()); }
};

TEST(Fit, FlushesDenormalsWhileTrainingAndRestoresTheMode) {
  if (!set_flush_denormal(false)) GTEST_SKIP() << "this CPU has no flush-to-zero mode";
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(32, 4, 7), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  auto watcher = std::make_shared<DenormalModeWatcher>();
  train::FitOptions o = quiet(1);
  o.callbacks = {watcher};
  train::fit(*model, opt, loader, o);
  ASSERT_EQ(watcher->seen.size(), 4u);
  for (bool on : watcher->seen) EXPECT_TRUE(on);
  EXPECT_FALSE(flush_denormal_enabled()) << "fit restores the mode it found";

  watcher->seen.clear();
  o.flush_denormals = false;
  train::fit(*model, opt, loader, o);
  ASSERT_EQ(watcher->seen.size(), 4u);
  for (bool on : watcher->seen) EXPECT_FALSE(on) << "flush_denormals = false leaves the mode alone";
}

TEST(Fit, LinesModePrintsOneLinePerEpoch) {
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(32, 4, 8), loader_options(8));
  data::DataLoader val(quadrant_dataset(16, 4, 9), loader_options(8, false));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  std::ostringstream out;
  train::FitOptions o = quiet(2);
  o.progress = train::ProgressMode::lines;
  o.out = &out;
  o.validation = &val;
  train::fit(*model, opt, loader, o);
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 4) << s;
  EXPECT_EQ(s.find('\r'), std::string::npos);
  EXPECT_EQ(s.rfind("Epoch 1/2\n4/4 [==============================] - ", 0), 0u) << s;
  for (const char* part : {"/step - ", "images/s - loss: ", " - accuracy: ", " - val_loss: ",
                           " - val_accuracy: ", "Epoch 2/2\n"})
    EXPECT_NE(s.find(part), std::string::npos) << part;
}

TEST(Fit, BarModeRedrawsInPlace) {
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(32, 4, 8), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  std::ostringstream out;
  train::FitOptions o = quiet(2);
  o.progress = train::ProgressMode::bar;
  o.out = &out;
  train::fit(*model, opt, loader, o);
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 4) << s;  // 2 x (header, final line)
  EXPECT_GE(std::count(s.begin(), s.end(), '\r'), 4) << s;  // a first running line and the final one
  EXPECT_NE(s.find("\r1/4 [======>.......................] - ETA: "), std::string::npos) << s;
  EXPECT_NE(s.find("\r4/4 [==============================] - "), std::string::npos) << s;
}

TEST(Fit, ArgumentErrors) {
  auto model = small_cnn(4);
  data::DataLoader loader(quadrant_dataset(16, 4, 1), loader_options(8));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  train::FitOptions o = quiet(0);
  EXPECT_ERROR_MENTIONS(train::fit(*model, opt, loader, o), "epochs must be >= 1");
  o = quiet(2);
  o.initial_epoch = 2;
  EXPECT_ERROR_MENTIONS(train::fit(*model, opt, loader, o), "initial_epoch");
  o = quiet(1);
  o.steps_per_epoch = -1;
  EXPECT_ERROR_MENTIONS(train::fit(*model, opt, loader, o), "steps_per_epoch");

  auto five = small_cnn(5);  // 5 outputs for 4 classes
  optim::SGD opt5(five->parameters(), optim::SGDOptions(0.01));
  EXPECT_ERROR_MENTIONS(train::fit(*five, opt5, loader, quiet(1)), "predicts 5 classes",
                        "dataset has 4");
  EXPECT_ERROR_MENTIONS(train::evaluate(*five, loader), "predicts 5 classes");
}

// A model whose logits are NaN: the per-step check names the step and the
// layer; without it, the epoch's mean loss is NaN and fit says so.
TEST(Fit, NonFiniteLossIsAnError) {
  struct Poisoned : nn::Module {
    std::shared_ptr<nn::Sequential> net = register_module("net", testing::small_cnn(4));
    Poisoned() : Module("Poisoned") {}
    Tensor forward(const Tensor& x) override {
      return (*net)(x) * std::numeric_limits<double>::quiet_NaN();
    }
  };
  Poisoned model;
  data::DataLoader loader(quadrant_dataset(16, 4, 1), loader_options(8));
  optim::SGD opt(model.parameters(), optim::SGDOptions(0.01));
  EXPECT_ERROR_MENTIONS(train::fit(model, opt, loader, quiet(2)), "epoch 1, step 1",
                        "output of layer '(model)' (Poisoned)", "32 NaN");
  train::FitOptions o = quiet(2);
  o.nonfinite = train::NonFinite::unchecked;
  EXPECT_ERROR_MENTIONS(train::fit(model, opt, loader, o), "training loss became nan", "epoch 1");
}

TEST(Predict, ProbabilitiesOfRawImagesWithTheGivenPreprocessing) {
  manual_seed(3);
  auto model = small_cnn(4);
  auto data = quadrant_dataset(5, 4, 10);
  std::vector<Tensor> raw;
  for (std::int64_t i = 0; i < 5; ++i) raw.push_back(data->get(i).image);
  train::PredictOptions po;
  po.batch_size = 2;  // three forward passes
  const Tensor probs = train::predict(*model, testing::unit_scale(), raw, po);
  ASSERT_EQ(probs.shape(), (Shape{5, 4}));
  EXPECT_EQ(probs.device(), kCPU);

  model->eval();
  Tensor batch = empty({5, 1, 8, 8});
  for (std::int64_t i = 0; i < 5; ++i) batch.select(0, i).copy_(raw[static_cast<std::size_t>(i)]);
  const Tensor want = softmax((*model)(batch * (1.0 / 255)), 1);
  model->train();
  EXPECT_TRUE(testing::all_close(probs, want.to_vector<double>(), 1e-6, 1e-6));
  EXPECT_TRUE(model->is_training());
  // The [N, C, H, W] overload agrees.
  EXPECT_TRUE(testing::all_close(train::predict(*model, testing::unit_scale(), batch),
                                 want.to_vector<double>(), 1e-6, 1e-6));

  // Images of other sizes need a resize in the preprocessing.
  std::vector<Tensor> mixed{raw[0], full({1, 12, 10}, 128.0)};
  EXPECT_ERROR_MENTIONS(train::predict(*model, testing::unit_scale(), mixed), "different sizes");
  const data::Preprocessing resize = data::Preprocessing::identity().resize(8, 8).rescale(1.0 / 255);
  EXPECT_EQ(train::predict(*model, resize, mixed).shape(), (Shape{2, 4}));

  io::Checkpoint ck;  // holds no preprocessing
  EXPECT_ERROR_MENTIONS(train::predict(*model, ck, raw), "stores no preprocessing");
  EXPECT_ERROR_MENTIONS(train::predict(*model, ck, batch), "stores no preprocessing");
}

// make_checkpoint stores the preprocessing it is given; predict on the
// reloaded checkpoint applies it to one image, a batch or a list alike.
TEST(Predict, AReloadedCheckpointAppliesItsPreprocessing) {
  manual_seed(4);
  auto model = small_cnn(4);
  auto data = quadrant_dataset(3, 4, 11);
  std::vector<Tensor> raw;
  Tensor batch = empty({3, 1, 8, 8});
  for (std::int64_t i = 0; i < 3; ++i) {
    raw.push_back(data->get(i).image);
    batch[i].copy_(raw.back());
  }
  const data::Preprocessing pre = data::Preprocessing::identity().rescale(1.0 / 255).normalize({0.5}, {0.25});
  const Tensor want = train::predict(*model, pre, batch);

  testing::TempDir dir;
  io::save_checkpoint(dir.file("m.ckpt"), io::make_checkpoint(*model, nullptr, pre));
  const io::Checkpoint ck = io::load_checkpoint(dir.file("m.ckpt"));
  ASSERT_TRUE(ck.preprocessing.has_value());
  auto reloaded = io::build_model(ck);
  const Tensor from_batch = train::predict(*reloaded, ck, batch);
  const Tensor from_list = train::predict(*reloaded, ck, raw);
  const Tensor from_one = train::predict(*reloaded, ck, raw[1]);
  EXPECT_EQ(from_batch.to_vector<float>(), want.to_vector<float>());
  EXPECT_EQ(from_list.to_vector<float>(), want.to_vector<float>());
  ASSERT_EQ(from_one.shape(), (Shape{1, 4}));
  // A batch of one may round differently from a batch of three (another GEMM blocking).
  EXPECT_TRUE(testing::all_close(from_one, want[1].to_vector<double>(), 1e-6, 1e-6));
  // Without the preprocessing the same model says something else: it was applied.
  EXPECT_NE(train::predict(*reloaded, data::Preprocessing::identity(), batch).to_vector<float>(),
            want.to_vector<float>());
  EXPECT_ERROR_MENTIONS(train::predict(*reloaded, ck, empty({2, 8, 8, 1, 1})), "expected images");
}

}  // namespace
}  // namespace convkit
