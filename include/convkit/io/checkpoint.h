#pragma once
// Checkpoints: everything needed to rebuild a trained model with no code, or
// to resume its training exactly, in one file of convkit's own format (byte
// layout in docs/io.md): a versioned, little-endian sequence of sections, each
// with a CRC32, one section per tensor.
//
// Saving during training:
//   io::Checkpoint ck = io::make_checkpoint(*model, &optimizer,   // spec, weights,
//                                           loader.preprocessing());  // optimizer, RNG
//   ck.epoch = epoch;  ck.step = step;
//   ck.set_metadata("zoo", "fmnist-cnn");
//   io::save_checkpoint("run/epoch3.ckpt", ck);
//
// Predicting from a file:
//   io::Checkpoint ck = io::load_checkpoint("run/epoch3.ckpt");
//   auto model = io::build_model(ck);        // from the spec, weights loaded
//   Tensor probs = train::predict(*model, ck, raw_images);   // applies ck.preprocessing
//
// Resuming exactly (same losses bit for bit as a run never interrupted):
//   auto model = io::build_model(ck);
//   auto opt = io::build_optimizer(ck, *model);
//   io::restore_generator(ck);               // dropout masks and shuffles continue
//
// Errors: a file that is not a checkpoint, of a newer format version, cut
// short, or corrupt gives convkit::Error naming the file, the byte offset and
// what was wrong ("CRC mismatch in model tensor 'features.0.weight'").
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convkit/data/preprocessing.h"
#include "convkit/nn/model_spec.h"
#include "convkit/nn/state_dict.h"
#include "convkit/ops/factory.h"

namespace convkit::optim {
class Optimizer;
}

namespace convkit::io {

// The format version this build writes; it reads every version up to this one.
inline constexpr std::uint32_t kCheckpointVersion = 1;

using Metadata = std::vector<std::pair<std::string, std::string>>;

struct Checkpoint {
  std::string model_spec;                            // nn::Module::spec()
  StateDict model_state;                             // Module::state_dict(), on the cpu after loading
  std::optional<data::Preprocessing> preprocessing;  // what predict must apply
  std::string optimizer_spec;                        // optim::optimizer_spec(); empty: none saved
  StateDict optimizer_state;                         // Optimizer::state_dict()
  std::int64_t epoch = 0;                            // whatever the trainer counts
  std::int64_t step = 0;
  Generator generator;                               // default_generator() when made
  Metadata metadata;                                 // free-form, in insertion order

  // Sets `key` (replacing an earlier value, keeping its place).
  void set_metadata(const std::string& key, const std::string& value);
  // The value of `key`, if set.
  std::optional<std::string> get_metadata(const std::string& key) const;
};

// The model's spec and state_dict, the optimizer's spec and state_dict (when
// given), `preprocessing`, and default_generator(). Tensors are shared with the
// live model, so save before the next step changes them.
//
// The model alone cannot know what its inputs went through, so pass the
// training loader's preprocessing (loader.preprocessing()): predict() on the
// reloaded checkpoint applies it, and refuses a checkpoint without one.
// train::ModelCheckpoint stores it for you.
Checkpoint make_checkpoint(const nn::Module& model, const optim::Optimizer* optimizer = nullptr,
                           std::optional<data::Preprocessing> preprocessing = std::nullopt);

// Writes atomically: into a temporary file in the same directory, fsync'd,
// then renamed over `path` (and the directory fsync'd), so a crash leaves
// either the old file or the new one, never a torn one. Tensors on other
// devices are copied to the cpu.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// Reads and verifies every section; tensors come back on the cpu.
Checkpoint load_checkpoint(const std::string& path);

// A new model from the spec with the saved weights. Building draws initial
// weights, but default_generator() is left as it was. `options` bounds what
// the spec may allocate (1 GiB by default; see nn::BuildOptions).
std::shared_ptr<nn::Module> build_model(const Checkpoint& checkpoint, const nn::BuildOptions& options = {});
// A new optimizer over model.parameters() from the saved spec, with its state
// restored. Throws Error when the checkpoint holds no optimizer.
std::unique_ptr<optim::Optimizer> build_optimizer(const Checkpoint& checkpoint, nn::Module& model);
// default_generator() = checkpoint.generator.
void restore_generator(const Checkpoint& checkpoint);

}  // namespace convkit::io
