// Tutorial: add your own differentiable op and layer, check its gradient,
// train a network that uses it, and save/restore it through a checkpoint.
//
// The op is Swish (Ramachandran et al. 2017), y = x * sigmoid(x), written the
// way convkit's own ops are: compute the forward value, then attach a
// backward with autograd::record. The backward closure receives dL/dy and
// returns dL/dx, built from differentiable ops on tensors saved at forward
// time (so even second derivatives would work).
//
// Run:
//   build/release/examples/custom_layer                       # Fashion-MNIST, 3,000 images
//   build/release/examples/custom_layer --data DIR --limit 500 --epochs 1
// Options: --data DIR (Fashion-MNIST IDX files), --limit N, --epochs E, --out DIR.
#include <convkit/convkit.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

using namespace convkit;

// ---- 1. The op ------------------------------------------------------------
Tensor swish(const Tensor& x) {
  CK_CHECK(x.defined() && is_floating(x.dtype()), "swish: expected a floating tensor, got ",
           x.defined() ? x.dtype() : DType::int64);
  Tensor s, out;
  {
    // The forward value is computed without recording a graph: record()
    // below gives `out` one node of its own instead of three (sigmoid, mul).
    NoGradGuard no_grad;
    s = sigmoid(x);
    out = x * s;
  }
  // dy/dx = s + x s (1 - s). SavedTensor remembers the tensor's version, so
  // an in-place change to x before backward is reported instead of giving a
  // wrong gradient.
  return autograd::record(out, "SwishBackward", {x},
                          [xs = autograd::SavedTensor(x), ss = autograd::SavedTensor(s)](const Tensor& g) {
                            const Tensor& x = xs.get();
                            const Tensor& s = ss.get();
                            return std::vector<Tensor>{g * (s + x * s * (1.0 - s))};
                          });
}

// ---- 2. The layer -----------------------------------------------------------
// A module wraps the op. spec() describes it as data, so a checkpoint can
// rebuild a model that contains it once the type is registered (step 5).
class Swish : public nn::Module {
 public:
  Swish() : Module("Swish") {}
  Tensor forward(const Tensor& x) override { return swish(x); }
  std::string spec() const override { return nn::SpecWriter("Swish").str(); }
};

namespace {

std::map<std::string, std::string> parse_args(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::fprintf(stderr, "custom_layer: expected --option value pairs, got '%s'\n", argv[i]);
      std::exit(2);
    }
    args[key.substr(2)] = argv[++i];
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) try {
  auto args = parse_args(argc, argv);
  const std::string root = args.count("data") ? args["data"] : data::kFashionMNISTDefaultRoot;
  const std::int64_t limit = args.count("limit") ? std::stoll(args["limit"]) : 3000;
  const std::int64_t epochs = args.count("epochs") ? std::stoll(args["epochs"]) : 1;
  const std::string out = args.count("out") ? args["out"]
                                            : (std::filesystem::temp_directory_path() / "swish").string();
  manual_seed(3);

  // ---- 3. Check the gradient against central differences, in float64.
  const Tensor probe = randn({4, 5}, DType::float64).requires_grad_();
  const autograd::GradcheckResult check = autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return sum(swish(in[0])); }, {probe});
  std::printf("gradcheck of swish: %s (max abs error %.2e)\n", check.ok ? "ok" : "FAILED",
              check.max_abs_error);
  if (!check.ok) {
    std::fprintf(stderr, "custom_layer: %s\n", check.message.c_str());
    return 1;
  }

  // ---- 4. Use the layer in a network and train it on Fashion-MNIST.
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 16, 3).init(nn::Init::keras)));
  model->push_back(std::make_shared<Swish>());
  model->push_back(std::make_shared<nn::MaxPool2d>(2));
  model->push_back(std::make_shared<nn::Flatten>());
  model->push_back(std::make_shared<nn::Linear>(16 * 13 * 13, 10));

  auto full_train = std::make_shared<data::FashionMNIST>(root, data::Split::train);
  std::vector<std::int64_t> order = data::epoch_order(full_train->size(), true, 7, 0);
  order.resize(static_cast<std::size_t>(std::min(limit, full_train->size())));
  auto train_set = std::make_shared<data::Subset>(full_train, order);
  data::DataLoaderOptions opts;
  opts.batch_size = 32;
  opts.preprocessing = data::Preprocessing::identity().rescale(1.0 / 255);
  data::DataLoader loader(train_set, opts);

  optim::Adam optimizer(model->parameters(), optim::AdamOptions(1e-3));
  train::FitOptions fit;
  fit.epochs = epochs;
  fit.profile = true;  // the profile shows Swish's own forward and backward cost
  const train::History history = train::fit(*model, optimizer, loader, fit);
  std::printf("\n%s\n", history.profile->table().c_str());

  // ---- 5. Checkpoints store the model's spec. Register the type so that
  //         io::build_model knows how to make a "Swish()" again.
  nn::register_module_type("Swish", [](nn::SpecArgs& a) {
    a.finish();  // Swish takes no options; anything given is an error
    return std::make_shared<Swish>();
  });
  io::Checkpoint ck = io::make_checkpoint(*model, &optimizer, loader.preprocessing());
  std::filesystem::create_directories(out);
  io::save_checkpoint(out + "/swish.ckpt", ck);
  const io::Checkpoint loaded = io::load_checkpoint(out + "/swish.ckpt");
  std::shared_ptr<nn::Module> restored = io::build_model(loaded);
  std::printf("rebuilt from the checkpoint's spec: %s\n", loaded.model_spec.c_str());

  // The restored model predicts what the trained one does.
  const data::Example e = train_set->get(0);
  const Tensor a = train::predict(*model, loader.preprocessing(), e.image);
  const Tensor b = train::predict(*restored, loaded, e.image);
  const double diff = max(abs(a - b)).item();
  std::printf("largest difference between their probabilities: %.3g\n", diff);
  return diff == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "custom_layer: %s\n", e.what());
  return 1;
}
