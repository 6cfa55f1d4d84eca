#pragma once
// Training and inference loops in the style of Keras' model.fit / evaluate /
// predict, for any nn::Module that maps images [N, C, H, W] to logits.
//
//   auto model = models::create("fmnist-cnn");
//   optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));
//   data::DataLoader train_loader(train_set, {.batch_size = 64, .preprocessing = pre});
//   data::DataLoader test_loader(test_set, {.batch_size = 256, .shuffle = false,
//                                           .preprocessing = pre});
//   train::FitOptions options;
//   options.epochs = 5;
//   options.validation = &test_loader;
//   train::History history = train::fit(*model, opt, train_loader, options);
//   train::EvalResult test = train::evaluate(*model, test_loader);
//   Tensor probs = train::predict(*model, pre, raw_images);   // [N, 10]
//
// Losses and accuracies are exact means over the examples seen (not means
// of per-batch means), accumulated on the device so a step never waits for
// the device except where the progress bar is redrawn.
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include "convkit/core/device.h"
#include "convkit/core/tensor.h"
#include "convkit/train/callbacks.h"
#include "convkit/train/history.h"
#include "convkit/train/loss.h"

namespace convkit::nn { class Module; }
namespace convkit::optim { class Optimizer; }
namespace convkit::data { class DataLoader; class Preprocessing; }
namespace convkit::dist { class ProcessGroup; }

namespace convkit::train {

// What fit() does when a step's loss or a parameter gradient holds NaN or Inf.
enum class NonFinite {
  // Throws Error naming the epoch, the step, the layer (module path) and the
  // tensor: a parameter or buffer, a layer's output, the loss, or a gradient.
  error,
  // Skips the optimizer step (the gradients are dropped) and counts it, as
  // AMP's GradScaler skips steps whose gradients overflowed: History's
  // skipped_steps and the epoch's "skipped_steps" log. The skipped batch's
  // loss is left out of the epoch's mean.
  skip_step,
  // No per-step check; only an epoch's mean loss is checked, at its end.
  unchecked,
};

enum class ProgressMode {
  automatic,  // bar on a terminal, lines otherwise
  bar,        // redrawn in place with '\r'
  lines,      // the final line of each epoch only
  none,       // silent
};

struct FitOptions {
  std::int64_t epochs = 1;
  // Resuming: the first epoch run is initial_epoch (its number in the logs
  // and the data loader's epoch, so shuffles continue), the last epochs - 1.
  std::int64_t initial_epoch = 0;
  // Resuming mid-epoch: the first initial_step batches of initial_epoch are
  // skipped (never loaded), as an interrupted run's checkpoint records them
  // (io::Checkpoint::step). The epoch's logged loss and accuracy then cover
  // the remaining batches only.
  std::int64_t initial_step = 0;
  LossKind loss = LossKind::automatic;
  // Where to train: the model is moved there in place (optimizers follow,
  // see nn::Module::to) and so is every batch. Unset: the device of the
  // model's first parameter.
  std::optional<Device> device;
  // Evaluated after every epoch into val_loss / val_accuracy.
  data::DataLoader* validation = nullptr;
  std::vector<std::shared_ptr<Callback>> callbacks;
  ProgressMode progress = ProgressMode::automatic;
  std::ostream* out = nullptr;  // progress output; null: std::cout
  // Per-layer forward/backward timings of every training step, in
  // History::profile (see convkit/train/profiler.h).
  bool profile = false;
  // Train on at most this many batches per epoch (0: all), e.g. for smoke runs.
  std::int64_t steps_per_epoch = 0;
  // Flush denormal floats to zero on the CPU while training (FTZ + DAZ,
  // convkit/core/denormals.h), restoring the previous mode on return. As
  // training goes on, denormals otherwise slow a step down by a third or
  // more. false: fit leaves the mode as it finds it.
  bool flush_denormals = true;
  // The per-step check for NaN and Inf (see NonFinite). It costs one
  // reduction per gradient and one device wait per step; measured on the
  // quickstart model in docs/training.md.
  NonFinite nonfinite = NonFinite::error;
  // SIGINT and SIGTERM stop training at the end of the step (see
  // convkit/train/stop_signal.h); a second signal exits at once. Whether or
  // not this is set, train::request_stop() ends fit() the same way.
  bool stop_on_signal = false;
  // Data-parallel training (docs/distributed.md). With a group of several
  // ranks, every rank calls fit() with the same options and a loader that
  // reads its own shard (data::DataLoaderOptions::shard); the model is
  // wrapped in dist::DistributedDataParallel, so it starts from rank 0's
  // parameters and buffers and each step applies the gradient averaged over
  // the ranks. An epoch's loss, accuracy, images/s and validation cover the
  // examples of every rank; only rank 0 shows progress; the ranks agree at
  // each step on stopping (a signal, request_stop) and on a non-finite step.
  // Callbacks run on every rank: give the ones that write files to rank 0
  // alone, as `convkit train` does. Null, or one rank: plain training.
  std::shared_ptr<dist::ProcessGroup> process_group;
  // The group that DistributedDataParallel broadcasts the parameters and
  // reduces the gradients on, when it is not process_group: a device group
  // over the same ranks (dist::device_group, NCCL for a model on cuda), so
  // that gradients stay on the device. The step agreement and the metrics
  // still go over process_group. Null: process_group does everything.
  std::shared_ptr<dist::ProcessGroup> gradient_group;
};

// Trains `model` with `optimizer` on `train_loader` (in training mode; the
// model is left in training mode). Throws Error for a bad option, a model
// whose output does not match the dataset's classes, a non-finite loss or
// gradient (see NonFinite), or an error of the loader (a corrupt file, named
// by the dataset). A stop request ends training after the current step:
// callbacks' on_train_interrupted saves and flushes, and the returned
// History says where it stopped (History::interrupted).
History fit(nn::Module& model, optim::Optimizer& optimizer, data::DataLoader& train_loader,
            const FitOptions& options);

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  std::int64_t examples = 0;
  double seconds = 0;
  double images_per_sec() const { return seconds > 0 ? static_cast<double>(examples) / seconds : 0; }
};

struct EvaluateOptions {
  LossKind loss = LossKind::automatic;
  std::optional<Device> device;  // as FitOptions::device
  std::int64_t max_batches = 0;  // 0: every batch
  // Several ranks, each evaluating its own shard of the loader's data set:
  // the result covers every rank's examples (each counted once).
  std::shared_ptr<dist::ProcessGroup> process_group;
};

// Mean loss and accuracy over one pass of `loader` (its epoch 0), in eval
// mode without autograd; the model's mode is restored afterwards.
EvalResult evaluate(nn::Module& model, data::DataLoader& loader, const EvaluateOptions& options = {});

struct PredictOptions {
  LossKind loss = LossKind::automatic;
  std::optional<Device> device;   // as FitOptions::device
  std::int64_t batch_size = 256;  // images per forward pass
};

// Class probabilities, float32 [N, classes] on the cpu, of raw images
// (pixel values 0..255, as a Dataset returns them): [C, H, W], [N, C, H, W],
// or a list of [C, H, W] images of any sizes. `preprocessing` is applied
// first; pass the one the model was trained with (a checkpoint stores it,
// see the overload below). Runs in eval mode without autograd.
Tensor predict(nn::Module& model, const data::Preprocessing& preprocessing, const Tensor& images,
               const PredictOptions& options = {});
Tensor predict(nn::Module& model, const data::Preprocessing& preprocessing,
               const std::vector<Tensor>& images, const PredictOptions& options = {});
// With the preprocessing stored in the checkpoint the model was built from
// (one image, a batch or a list, as above); throws Error when it holds none.
Tensor predict(nn::Module& model, const io::Checkpoint& checkpoint, const Tensor& images,
               const PredictOptions& options = {});
Tensor predict(nn::Module& model, const io::Checkpoint& checkpoint,
               const std::vector<Tensor>& images, const PredictOptions& options = {});

// The device of the model's first parameter (or buffer); cpu for a model
// with neither.
Device module_device(const nn::Module& model);

}  // namespace convkit::train
