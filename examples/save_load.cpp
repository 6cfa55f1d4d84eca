// Tutorial: the three ways to save a model and load it back.
//
//   1. A state dict: the weights alone, under their dotted names. You rebuild
//      the model in code and load the weights into it.
//   2. A checkpoint: convkit's own file, which also holds the model's spec
//      (so no code is needed to rebuild it), the preprocessing that predict
//      must apply, the optimizer's state and the training position.
//   3. safetensors: the weights in the format PyTorch reads
//      (safetensors.torch.load_file), under the names a PyTorch module of the
//      same structure uses.
//
// Run:  build/release/examples/save_load [--out DIR]   (default: save_load_out)
// Each step checks that what came back predicts exactly what went in.
#include <convkit/convkit.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

using namespace convkit;

namespace {

std::shared_ptr<nn::Sequential> make_model() {
  return std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(1, 8, 3), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(8 * 13 * 13, 10));
}

double largest_difference(const Tensor& a, const Tensor& b) { return max(abs(a - b)).item(); }

}  // namespace

int main(int argc, char** argv) try {
  const std::string out = argc == 3 && std::strcmp(argv[1], "--out") == 0 ? argv[2] : "save_load_out";
  std::filesystem::create_directories(out);

  // A model after a few training steps, and the preprocessing its loader used.
  manual_seed(1);
  auto model = make_model();
  const data::Preprocessing preprocessing = data::Preprocessing::identity().rescale(1.0 / 255);
  optim::Adam optimizer(model->parameters(), optim::AdamOptions(1e-3));
  const Tensor raw = randint(0, 256, {16, 1, 28, 28}, DType::float32);  // pixels 0..255
  const Tensor labels = randint(0, 10, {16});
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad();
    cross_entropy((*model)(preprocessing.apply(raw)), labels).backward();
    optimizer.step();
  }
  const Tensor expected = train::predict(*model, preprocessing, raw);  // [16, 10]

  // ---- 1. State dict: weights by name; the model comes from code. -----------
  // A state dict is a list of (name, tensor); a checkpoint is the way to put
  // one in a file, and safetensors the way to share one (both below).
  const StateDict state = model->state_dict();  // "0.weight", "0.bias", "4.weight", "4.bias"
  auto from_code = make_model();
  from_code->load_state_dict(state);  // strict: every name present, every shape equal
  const double d1 = largest_difference(train::predict(*from_code, preprocessing, raw), expected);
  std::printf("1. state dict: %zu tensors, largest difference %.3g\n", state.size(), d1);

  // ---- 2. Checkpoint: spec, weights, preprocessing, optimizer, position. ----
  io::Checkpoint ck = io::make_checkpoint(*model, &optimizer, preprocessing);
  ck.epoch = 1;
  ck.set_metadata("note", "three steps on random pixels");
  io::save_checkpoint(out + "/model.ckpt", ck);

  const io::Checkpoint loaded = io::load_checkpoint(out + "/model.ckpt");
  std::shared_ptr<nn::Module> rebuilt = io::build_model(loaded);  // no code: from loaded.model_spec
  // predict applies the stored preprocessing: raw pixels in, probabilities out.
  const double d2 = largest_difference(train::predict(*rebuilt, loaded, raw), expected);
  std::printf("2. checkpoint: %s, largest difference %.3g\n", loaded.model_spec.c_str(), d2);
  // To continue training instead: io::build_optimizer(loaded, *rebuilt) and
  // io::restore_generator(loaded) (see docs/training.md, "Resuming").

  // ---- 3. safetensors: for PyTorch, or any tool that reads the format. -----
  io::save_safetensors(out + "/model.safetensors", model->state_dict(), {{"format", "pt"}});
  const io::SafetensorsFile file = io::load_safetensors(out + "/model.safetensors");
  auto from_safetensors = make_model();
  from_safetensors->load_state_dict(file.tensors);
  const double d3 = largest_difference(train::predict(*from_safetensors, preprocessing, raw), expected);
  std::printf("3. safetensors: %zu tensors, largest difference %.3g\n", file.tensors.size(), d3);

  const bool same = d1 == 0 && d2 == 0 && d3 == 0;
  std::printf("%s\n", same ? "every copy predicts exactly what the original does" : "MISMATCH");
  return same ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "save_load: %s\n", e.what());
  return 1;
}
