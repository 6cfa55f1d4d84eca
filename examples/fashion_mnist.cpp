// Tutorial: train a CNN on Fashion-MNIST, evaluate it, save a checkpoint and
// classify images with the checkpoint alone — the whole convkit workflow in
// one program, using only the public API.
//
// Run (Debian's dataset-fashion-mnist installs the data):
//   build/release/examples/fashion_mnist                  # 2 epochs on all 60,000 images
//   build/release/examples/fashion_mnist --epochs 1 --limit 2000 --test-limit 500
//   build/release/examples/fashion_mnist --data /path/to/idx/files --out /tmp/fmnist
// Options: --data DIR, --epochs E, --batch B, --limit N (training images),
// --test-limit N, --out DIR (checkpoint and CSV log), --device cpu|sim|cuda.
#include <convkit/convkit.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

using namespace convkit;

namespace {

// "--key value" pairs; a tutorial does not need more.
std::map<std::string, std::string> parse_args(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::fprintf(stderr, "fashion_mnist: expected --option value pairs, got '%s'\n", argv[i]);
      std::exit(2);
    }
    args[key.substr(2)] = argv[++i];
  }
  return args;
}

// The first n examples of a shuffled order: a class-balanced subset.
std::shared_ptr<const data::Dataset> first(std::shared_ptr<const data::Dataset> d, std::int64_t n) {
  if (n <= 0 || n >= d->size()) return d;
  std::vector<std::int64_t> order = data::epoch_order(d->size(), /*shuffle=*/true, /*seed=*/7, 0);
  order.resize(static_cast<std::size_t>(n));
  return std::make_shared<data::Subset>(std::move(d), std::move(order));
}

}  // namespace

int main(int argc, char** argv) try {
  auto args = parse_args(argc, argv);
  const std::string root = args.count("data") ? args["data"] : data::kFashionMNISTDefaultRoot;
  const std::int64_t epochs = args.count("epochs") ? std::stoll(args["epochs"]) : 2;
  const std::int64_t batch = args.count("batch") ? std::stoll(args["batch"]) : 64;
  const Device device(args.count("device") ? args["device"] : "cpu");
  const std::string out = args.count("out") ? args["out"]
                                            : (std::filesystem::temp_directory_path() / "fmnist").string();
  manual_seed(1);  // initial weights and dropout masks are reproducible

  // 1. Data. A Dataset hands out raw images (float32 [1, 28, 28], values
  //    0..255) and labels. Everything that turns raw pixels into model input
  //    lives in one Preprocessing value, which the checkpoint will store.
  auto train_set = first(std::make_shared<data::FashionMNIST>(root, data::Split::train),
                         args.count("limit") ? std::stoll(args["limit"]) : 0);
  auto test_set = first(std::make_shared<data::FashionMNIST>(root, data::Split::test),
                        args.count("test-limit") ? std::stoll(args["test-limit"]) : 0);
  const data::Preprocessing preprocessing = data::Preprocessing::identity().rescale(1.0 / 255);

  // 2. Loaders batch, shuffle (per epoch, reproducibly) and preprocess on a
  //    worker thread while the model trains.
  data::DataLoaderOptions train_opts;
  train_opts.batch_size = batch;
  train_opts.seed = 1;
  train_opts.workers = 1;
  train_opts.preprocessing = preprocessing;
  data::DataLoader train_loader(train_set, train_opts);
  data::DataLoaderOptions test_opts = train_opts;
  test_opts.shuffle = false;
  test_opts.batch_size = 256;
  data::DataLoader test_loader(test_set, test_opts);

  // 3. The model: two conv blocks and a dense head, from the model zoo. It
  //    ends in logits; fit() pairs it with softmax cross-entropy.
  std::shared_ptr<nn::Module> model = models::create("fmnist-cnn");
  std::printf("%s\n", nn::summary(*model, {1, 28, 28}).c_str());

  // 4. Train: Adam, a cosine learning-rate decay stepped once per epoch, a
  //    CSV log and checkpoints of the last and the best epoch.
  std::filesystem::create_directories(out);
  optim::Adam optimizer(model->parameters(), optim::AdamOptions(1e-3));
  train::FitOptions fit;
  fit.epochs = epochs;
  fit.device = device;  // the model moves there; batches follow
  fit.validation = &test_loader;
  train::ModelCheckpointOptions ck;
  ck.directory = out;
  ck.monitor = "val_accuracy";
  ck.metadata = {{"zoo", "fmnist-cnn"}};
  fit.callbacks = {
      std::make_shared<train::LRSchedulerCallback>(
          std::make_shared<optim::CosineAnnealingLR>(optimizer, epochs)),
      std::make_shared<train::CSVLogger>(out + "/log.csv"),
      std::make_shared<train::ModelCheckpoint>(ck),
  };
  const train::History history = train::fit(*model, optimizer, train_loader, fit);

  // 5. Evaluate the final weights on the test split.
  const train::EvalResult test = train::evaluate(*model, test_loader);
  std::printf("test loss %.4f, test accuracy %.4f on %lld images; trained at %.0f images/s\n",
              test.loss, test.accuracy, static_cast<long long>(test.examples),
              history.last().at("images_per_sec"));

  // 6. A checkpoint is enough to predict: it rebuilds the model from its
  //    spec and applies the stored preprocessing to raw images.
  const io::Checkpoint saved = io::load_checkpoint(out + "/last.ckpt");
  std::shared_ptr<nn::Module> restored = io::build_model(saved);
  std::vector<Tensor> raw;
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < std::min<std::int64_t>(5, test_set->size()); ++i) {
    const data::Example e = test_set->get(i);
    raw.push_back(e.image);
    labels.push_back(e.label);
  }
  const Tensor probs = train::predict(*restored, saved, raw);  // [5, 10] on the cpu
  const auto names = data::FashionMNIST::names();
  const auto predicted = argmax(probs, 1).to_vector<std::int64_t>();
  const auto p = probs.to_vector<float>();
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto k = static_cast<std::size_t>(predicted[i]);
    std::printf("test image %zu: predicted %-12s (p = %.3f), true %s\n", i, names[k].c_str(),
                p[i * 10 + k], names[static_cast<std::size_t>(labels[i])].c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fashion_mnist: %s\n", e.what());
  return 1;
}
