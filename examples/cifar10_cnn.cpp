// Tutorial: Keras' classic cifar10_cnn example in convkit — four conv layers,
// real-time data augmentation, RMSprop, and the callbacks that a long run
// wants: keep the best model, stop when validation stops improving.
//
// Get the data (CIFAR-10 binary version, 162 MB) from
// https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz and unpack it; then
//   build/release/examples/cifar10_cnn --data /path/to/cifar-10-batches-bin --epochs 10
// Options: --data DIR (required), --epochs E, --batch B, --limit N,
// --test-limit N, --algo automatic|direct|im2col_gemm|fft|winograd, --device D,
// --out DIR, --profile 1 (print which layers take the time).
#include <convkit/convkit.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

using namespace convkit;

namespace {

std::map<std::string, std::string> parse_args(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::fprintf(stderr, "cifar10_cnn: expected --option value pairs, got '%s'\n", argv[i]);
      std::exit(2);
    }
    args[key.substr(2)] = argv[++i];
  }
  return args;
}

std::shared_ptr<const data::Dataset> first(std::shared_ptr<const data::Dataset> d, std::int64_t n) {
  if (n <= 0 || n >= d->size()) return d;
  std::vector<std::int64_t> order = data::epoch_order(d->size(), true, 7, 0);
  order.resize(static_cast<std::size_t>(n));
  return std::make_shared<data::Subset>(std::move(d), std::move(order));
}

}  // namespace

int main(int argc, char** argv) try {
  auto args = parse_args(argc, argv);
  if (!args.count("data")) {
    std::fprintf(stderr, "cifar10_cnn: --data DIR is required (the CIFAR-10 binary batches)\n");
    return 2;
  }
  const std::int64_t epochs = args.count("epochs") ? std::stoll(args["epochs"]) : 10;
  const std::int64_t batch = args.count("batch") ? std::stoll(args["batch"]) : 32;
  const Device device(args.count("device") ? args["device"] : "cpu");
  const std::string out = args.count("out") ? args["out"]
                                            : (std::filesystem::temp_directory_path() / "cifar10").string();
  // The convolution algorithm can be chosen once for every layer (or per
  // layer with Conv2dOptions::algo). "automatic" uses the backend's heuristic.
  set_default_conv_algo(parse_conv_algo(args.count("algo") ? args["algo"] : "automatic"));
  manual_seed(1);

  // 1. Data: data_batch_1..5.bin for training, test_batch.bin for testing.
  auto train_set = first(std::make_shared<data::CIFAR10>(args["data"], data::Split::train),
                         args.count("limit") ? std::stoll(args["limit"]) : 0);
  auto test_set = first(std::make_shared<data::CIFAR10>(args["data"], data::Split::test),
                        args.count("test-limit") ? std::stoll(args["test-limit"]) : 0);
  std::printf("CIFAR-10: %lld training and %lld test images\n",
              static_cast<long long>(train_set->size()), static_cast<long long>(test_set->size()));

  // 2. Augmentation, as Keras' ImageDataGenerator(width_shift_range=0.1,
  //    height_shift_range=0.1, horizontal_flip=True). Each image gets fresh
  //    random shifts and flips every epoch, drawn from (seed, epoch, index),
  //    so a run is reproducible whatever the number of worker threads.
  data::Augmentation augment;
  augment.width_shift_range = 0.1;
  augment.height_shift_range = 0.1;
  augment.horizontal_flip = true;

  data::DataLoaderOptions train_opts;
  train_opts.batch_size = batch;
  train_opts.seed = 1;
  train_opts.workers = 2;  // augmentation runs on two threads beside training
  train_opts.preprocessing = data::Preprocessing::identity().rescale(1.0 / 255);
  train_opts.augmentation = augment;
  data::DataLoader train_loader(train_set, train_opts);
  data::DataLoaderOptions test_opts = train_opts;
  test_opts.shuffle = false;
  test_opts.augmentation = data::Augmentation();  // never augment evaluation data
  test_opts.batch_size = 256;
  data::DataLoader test_loader(test_set, test_opts);

  // 3. Model and optimizer: Keras' example uses RMSprop with lr 1e-4.
  std::shared_ptr<nn::Module> model = models::create("cifar10-cnn");
  optim::RMSprop optimizer(model->parameters(), optim::RMSpropOptions(1e-4));

  // 4. Callbacks: the best epoch by validation accuracy is kept in
  //    out/best.ckpt; training stops after 5 epochs without a better
  //    validation loss, and the best weights are put back.
  train::ModelCheckpointOptions ck;
  ck.directory = out;
  ck.monitor = "val_accuracy";
  ck.metadata = {{"zoo", "cifar10-cnn"}};
  train::EarlyStoppingOptions stop;
  stop.monitor = "val_loss";
  stop.patience = 5;
  stop.restore_best_weights = true;

  train::FitOptions fit;
  fit.epochs = epochs;
  fit.device = device;
  fit.validation = &test_loader;
  fit.profile = args.count("profile") && args["profile"] != "0";
  fit.callbacks = {std::make_shared<train::ModelCheckpoint>(ck),
                   std::make_shared<train::EarlyStopping>(stop)};
  const train::History history = train::fit(*model, optimizer, train_loader, fit);

  const train::EvalResult test = train::evaluate(*model, test_loader);
  std::printf("test loss %.4f, test accuracy %.4f (%zu epochs%s)\n", test.loss, test.accuracy,
              history.epochs.size(), history.stopped_early ? ", stopped early" : "");
  // 5. The profile answers "which layers dominate training time".
  if (history.profile) std::printf("\n%s", history.profile->table().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cifar10_cnn: %s\n", e.what());
  return 1;
}
