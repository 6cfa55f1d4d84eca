// Tutorial: a binary image classifier (cats vs dogs) from a folder of JPEG
// and PNG files, with Keras-style augmentation — the setup of the Keras blog
// post "Building powerful image classification models using very little
// data", and then a prediction on single image files.
//
// Folder layout (class names are the sorted subfolder names):
//   DIR/train/cats/*.jpg  DIR/train/dogs/*.jpg
//   DIR/validation/cats/  DIR/validation/dogs/
// Run:
//   build/release/examples/catdog --data DIR --epochs 10
//   build/release/examples/catdog --data DIR --epochs 1 --predict some/cat.jpg
// Options: --data DIR (required), --epochs E, --batch B, --device D,
// --out DIR, --predict FILE.
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
      std::fprintf(stderr, "catdog: expected --option value pairs, got '%s'\n", argv[i]);
      std::exit(2);
    }
    args[key.substr(2)] = argv[++i];
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) try {
  auto args = parse_args(argc, argv);
  if (!args.count("data")) {
    std::fprintf(stderr, "catdog: --data DIR is required (with train/ and validation/ inside)\n");
    return 2;
  }
  const std::string root = args["data"];
  const std::int64_t epochs = args.count("epochs") ? std::stoll(args["epochs"]) : 10;
  const std::int64_t batch = args.count("batch") ? std::stoll(args["batch"]) : 16;
  const Device device(args.count("device") ? args["device"] : "cpu");
  const std::string out = args.count("out") ? args["out"]
                                            : (std::filesystem::temp_directory_path() / "catdog").string();
  manual_seed(1);

  // 1. Image folders: files are decoded (PNG or JPEG, by their signature)
  //    to RGB when a batch needs them, on the loader's worker threads.
  auto train_set = std::make_shared<data::ImageFolder>(root + "/train");
  auto val_set = std::make_shared<data::ImageFolder>(root + "/validation");
  const auto classes = train_set->class_names();
  std::printf("%lld training and %lld validation images, classes:", static_cast<long long>(train_set->size()),
              static_cast<long long>(val_set->size()));
  for (const auto& c : classes) std::printf(" %s", c.c_str());
  std::printf("\n");

  // 2. The zoo model fixes the input size; the preprocessing resizes every
  //    photo to it and rescales to [0, 1]. Because the checkpoint stores this
  //    value, prediction on a new photo of any size needs no extra code.
  const models::ModelInfo& info = models::info("catdog-cnn");
  const data::Preprocessing preprocessing = data::Preprocessing::identity()
                                                .resize(info.input_shape[1], info.input_shape[2])
                                                .rescale(1.0 / 255);

  // 3. Augmentation as in the blog post's ImageDataGenerator: rotations,
  //    shifts, shear, zoom and mirror images; gaps are filled with the
  //    nearest edge pixel. Applied after the resize, before the rescale.
  data::Augmentation augment;
  augment.rotation_range = 40;
  augment.width_shift_range = 0.2;
  augment.height_shift_range = 0.2;
  augment.shear_range = 0.2;
  augment.zoom_range = data::Augmentation::zoom(0.2);
  augment.horizontal_flip = true;
  augment.fill_mode = data::FillMode::nearest;

  data::DataLoaderOptions train_opts;
  train_opts.batch_size = batch;
  train_opts.seed = 1;
  train_opts.workers = 2;
  train_opts.preprocessing = preprocessing;
  train_opts.augmentation = augment;
  data::DataLoader train_loader(train_set, train_opts);
  data::DataLoaderOptions val_opts = train_opts;
  val_opts.shuffle = false;
  val_opts.augmentation = data::Augmentation();
  data::DataLoader val_loader(val_set, val_opts);

  // 4. One sigmoid output: fit() sees a single logit column and uses binary
  //    cross-entropy with logits; accuracy thresholds the probability at 1/2.
  std::shared_ptr<nn::Module> model = models::create("catdog-cnn");
  optim::Adam optimizer(model->parameters(), optim::AdamOptions(1e-3));
  train::ModelCheckpointOptions ck;
  ck.directory = out;
  ck.monitor = "val_accuracy";
  ck.metadata = {{"zoo", "catdog-cnn"}};
  train::FitOptions fit;
  fit.epochs = epochs;
  fit.device = device;
  fit.validation = &val_loader;
  fit.callbacks = {std::make_shared<train::ModelCheckpoint>(ck)};
  const train::History history = train::fit(*model, optimizer, train_loader, fit);
  std::printf("validation accuracy %.4f after %zu epochs\n", history.last().at("val_accuracy"),
              history.epochs.size());

  // 5. Predict single files with the best checkpoint: probabilities come back
  //    as [1 - p, p], one column per class.
  if (args.count("predict")) {
    const io::Checkpoint best = io::load_checkpoint(out + "/best.ckpt");
    std::shared_ptr<nn::Module> restored = io::build_model(best);
    const Tensor probs = train::predict(*restored, best, {data::load_image(args["predict"])});
    const auto p = probs.to_vector<float>();
    std::printf("%s: %s %.4f, %s %.4f\n", args["predict"].c_str(), classes[0].c_str(), p[0],
                classes[1].c_str(), p[1]);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "catdog: %s\n", e.what());
  return 1;
}
