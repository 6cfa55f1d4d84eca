#include "convkit/train/fit.h"

#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>

#include "convkit/autograd/grad_mode.h"
#include "convkit/core/denormals.h"
#include "convkit/core/error.h"
#include "convkit/data/data_loader.h"
#include "convkit/data/preprocessing.h"
#include "convkit/dist/distributed_data_parallel.h"
#include "convkit/dist/process_group.h"
#include "convkit/nn/module.h"
#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"
#include "convkit/ops/reduce.h"
#include "convkit/optim/optimizer.h"
#include "convkit/train/profiler.h"
#include "convkit/train/progress.h"
#include "convkit/train/stop_signal.h"
#include "train/nonfinite.h"
#include "train/rank_agreement.h"

namespace convkit::train {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Puts the model back in the mode it had, however the scope is left.
class ModeGuard {
 public:
  ModeGuard(nn::Module& model, bool training) : model_(model), was_(model.is_training()) {
    model_.train(training);
  }
  ~ModeGuard() { model_.train(was_); }
  ModeGuard(const ModeGuard&) = delete;
  ModeGuard& operator=(const ModeGuard&) = delete;

 private:
  nn::Module& model_;
  bool was_;
};

// Running sums of loss * examples and correct predictions, kept on the device
// (float64, so 60000 additions lose nothing) and read only when needed.
class RunningMetrics {
 public:
  explicit RunningMetrics(Device device)
      : loss_sum_(zeros({}, TensorOptions(DType::float64).device(device))),
        correct_(zeros({}, TensorOptions(DType::float64).device(device))) {}

  void add(LossKind kind, const Tensor& logits, const Tensor& labels, const Tensor& loss) {
    NoGradGuard no_grad;
    const std::int64_t n = labels.size(0);
    loss_sum_.add_(loss.detach().to(DType::float64), static_cast<double>(n));
    // Class indices compare exactly as float64 (eq is defined on floating types).
    correct_.add_(sum(eq(predicted_classes(kind, logits).to(DType::float64),
                         labels.to(DType::float64))));
    examples_ += n;
  }
  std::int64_t examples() const { return examples_; }
  double loss() const {
    return examples_ ? loss_sum() / static_cast<double>(examples_) : 0.0;
  }
  double accuracy() const {
    return examples_ ? correct() / static_cast<double>(examples_) : 0.0;
  }
  // From here on the metrics cover the examples of every rank of `group`;
  // every rank must call it at the same point. Nothing may be added after.
  void sum_over_ranks(dist::ProcessGroup* group) {
    double loss = loss_sum(), right = correct();
    detail::sum_over_ranks(group, loss, right, examples_);
    totals_ = {loss, right};
  }

 private:
  double loss_sum() const { return totals_ ? totals_->first : loss_sum_.item(); }
  double correct() const { return totals_ ? totals_->second : correct_.item(); }

  Tensor loss_sum_, correct_;
  std::int64_t examples_ = 0;
  std::optional<std::pair<double, double>> totals_;  // over the ranks, once summed
};

void check_classes(const Tensor& logits, const data::DataLoader& loader, const char* who) {
  const std::int64_t model_classes = num_classes_of(logits);
  const std::int64_t data_classes = loader.dataset().num_classes();
  CK_CHECK(model_classes == data_classes, who, ": the model predicts ", model_classes,
           " classes (its output has shape ", logits.shape(), ") but the dataset has ",
           data_classes);
}

}  // namespace

Device module_device(const nn::Module& model) {
  for (const Tensor& p : model.parameters()) return p.device();
  for (const Tensor& b : model.buffers()) return b.device();
  return kCPU;
}

History fit(nn::Module& model, optim::Optimizer& optimizer, data::DataLoader& train_loader,
            const FitOptions& options) {
  CK_CHECK(options.epochs >= 1, "fit: epochs must be >= 1, got ", options.epochs);
  CK_CHECK(options.initial_epoch >= 0 && options.initial_epoch < options.epochs,
           "fit: initial_epoch must be in [0, epochs), got ", options.initial_epoch, " with epochs ",
           options.epochs);
  CK_CHECK(options.initial_step >= 0 && options.initial_step < train_loader.num_batches(),
           "fit: initial_step must be in [0, ", train_loader.num_batches(),
           ") (the batches of an epoch), got ", options.initial_step);
  CK_CHECK(options.steps_per_epoch >= 0, "fit: steps_per_epoch must be >= 0, got ",
           options.steps_per_epoch);
  CK_CHECK(!optimizer.param_groups().empty(), "fit: the optimizer has no parameter groups");
  CK_CHECK(train_loader.num_batches() > 0, "fit: the training loader yields no batch (",
           train_loader.dataset().size(), " examples, batch size ",
           train_loader.options().batch_size, ")");

  const Device device = options.device.value_or(module_device(model));
  if (options.device) model.to(device);
  std::ostream& out = options.out ? *options.out : std::cout;
  ProgressMode mode = options.progress;
  if (mode == ProgressMode::automatic)
    mode = (&out == &std::cout && is_terminal(stdout)) ? ProgressMode::bar : ProgressMode::lines;
  dist::ProcessGroup* group = options.process_group.get();
  if (group && group->rank() != 0) mode = ProgressMode::none;  // rank 0 speaks for the job

  std::optional<FlushDenormalGuard> denormals;
  if (options.flush_denormals) denormals.emplace(true);
  History history;
  TrainContext context{model, optimizer, train_loader.preprocessing(), history, options.epochs};
  std::unique_ptr<LayerProfiler> profiler;
  if (options.profile) profiler = std::make_unique<LayerProfiler>(model, device);
  // Several ranks: the same model on each (rank 0's weights, broadcast now),
  // gradients averaged over the ranks during backward. Callbacks still see
  // `model` itself, so checkpoints hold its names, not the wrapper's.
  std::shared_ptr<dist::DistributedDataParallel> ddp;
  if (group && group->size() > 1) {
    const auto& gradients = options.gradient_group ? options.gradient_group : options.process_group;
    CK_CHECK(gradients->size() == group->size() && gradients->rank() == group->rank(),
             "fit: the gradient group (rank ", gradients->rank(), " of ", gradients->size(),
             ") must hold the ranks of the process group (rank ", group->rank(), " of ", group->size(), ")");
    ddp = std::make_shared<dist::DistributedDataParallel>(
        std::shared_ptr<nn::Module>(std::shared_ptr<nn::Module>(), &model), gradients);
  }
  const LossKind requested = options.loss;

  std::optional<SignalStopGuard> signals;
  if (options.stop_on_signal) signals.emplace();
  clear_stop_request();

  ModeGuard train_mode(model, true);
  for (const auto& cb : options.callbacks) cb->on_train_begin(context);
  auto interrupt = [&](std::int64_t epoch, std::int64_t steps_done) {
    history.interrupted = Interruption{epoch, steps_done, stop_signal()};
    for (const auto& cb : options.callbacks) cb->on_train_interrupted(epoch, steps_done, context);
    out.flush();
  };

  for (std::int64_t epoch = options.initial_epoch; epoch < options.epochs; ++epoch) {
    for (const auto& cb : options.callbacks) cb->on_epoch_begin(epoch, context);
    model.train(true);  // a callback may have evaluated in between
    const double lr = optimizer.param_groups().front().lr.value_or(0.0);
    std::int64_t total = train_loader.num_batches();
    if (options.steps_per_epoch > 0) total = std::min(total, options.steps_per_epoch);
    if (mode != ProgressMode::none)
      out << "Epoch " << epoch + 1 << "/" << options.epochs << std::endl;
    ProgressBar bar(out, total, mode == ProgressMode::bar);

    RunningMetrics metrics(device);
    const std::int64_t first_step = epoch == options.initial_epoch ? options.initial_step : 0;
    train_loader.start_epoch(static_cast<std::uint64_t>(epoch), first_step);
    const auto start = std::chrono::steady_clock::now();
    std::int64_t step = first_step, skipped = 0;
    while (step < total) {
      const auto wait_start = std::chrono::steady_clock::now();
      std::optional<data::Batch> batch;
      try {
        batch = train_loader.next();
      } catch (const Error& e) {
        // The reader names the file; this says where in the run it was met.
        CK_FAIL("fit: epoch ", epoch + 1, ", step ", step + 1, ": loading the batch failed: ",
                e.what());
      }
      if (!batch) break;
      if (profiler) profiler->data_wait(seconds_since(wait_start));
      const Tensor images = batch->images.to(device);
      const Tensor labels = batch->labels.to(device);

      // The profiler runs the layers one by one, past the wrapper's forward.
      if (profiler && ddp) ddp->prepare_forward();
      const Tensor logits = profiler ? profiler->forward(images) : ddp ? (*ddp)(images) : model(images);
      if (step == 0 && epoch == options.initial_epoch) check_classes(logits, train_loader, "fit");
      const LossKind kind = resolve_loss(requested, logits);
      auto compute = [&] { return compute_loss(kind, logits, labels); };
      const Tensor loss = profiler ? profiler->loss(compute) : compute();
      if (profiler) {
        profiler->optimizer([&] { optimizer.zero_grad(); });
        profiler->backward(loss);
      } else {
        optimizer.zero_grad();
        loss.backward();
      }
      std::optional<std::string> culprit;
      if (options.nonfinite != NonFinite::unchecked && !detail::step_sum_is_finite(model, loss))
        culprit = detail::locate_nonfinite(model, images, loss);
      // Every rank takes the same branch: a rank's own loss can be bad while
      // the averaged gradients are fine, and a signal reaches the ranks at
      // different steps.
      const detail::StepVerdict verdict = detail::agree_on_step(group, culprit.has_value(), stop_requested());
      const bool finite = !verdict.any_nonfinite;
      CK_CHECK(finite || options.nonfinite == NonFinite::skip_step, "fit: epoch ", epoch + 1,
               ", step ", step + 1, ": ",
               culprit ? *culprit : std::string("another rank's loss or gradients were not finite"),
               "; a learning rate that is too high is the usual cause "
               "(FitOptions::nonfinite = NonFinite::skip_step skips such steps)");
      if (verdict.any_stop && !stop_requested()) request_stop();
      if (finite) {
        if (profiler) profiler->optimizer([&] { optimizer.step(); });
        else optimizer.step();
        metrics.add(kind, logits, labels, loss);
      } else {
        optimizer.zero_grad();  // nothing of the bad step survives it
        ++skipped;
      }
      if (profiler) profiler->end_step(labels.size(0));
      ++step;
      for (const auto& cb : options.callbacks) cb->on_batch_end(step - 1, context);
      if (stop_requested()) break;
      if (mode == ProgressMode::bar && step < total) {
        const double elapsed = seconds_since(start);
        if (bar.due(step, elapsed))  // reading the metrics waits for the device
          bar.update(step, elapsed, {{"loss", metrics.loss()}, {"accuracy", metrics.accuracy()}});
      }
    }
    history.skipped_steps += skipped;
    if (stop_requested() && step < total) {
      if (mode != ProgressMode::none)
        out << "\nstopped after step " << step << "/" << total << " of epoch " << epoch + 1 << "\n";
      // The partial epoch is not logged: its checkpoint resumes it instead.
      interrupt(epoch, step);
      break;
    }
    // Reading the loss waits for the device, so `seconds` covers queued work too.
    metrics.sum_over_ranks(group);
    const double train_loss = metrics.loss();
    const double seconds = seconds_since(start);
    CK_CHECK(std::isfinite(train_loss), "fit: the training loss became ", train_loss,
             " in epoch ", epoch + 1, " (a learning rate that is too high is the usual cause)");

    EpochLogs logs;
    logs.epoch = epoch;
    logs.set("loss", train_loss);
    logs.set("accuracy", metrics.accuracy());
    if (options.validation) {
      const EvalResult val =
          evaluate(model, *options.validation, EvaluateOptions{requested, device, 0, options.process_group});
      logs.set("val_loss", val.loss);
      logs.set("val_accuracy", val.accuracy);
      logs.set("val_seconds", val.seconds);
    }
    const double images_per_sec =
        seconds > 0 ? static_cast<double>(metrics.examples()) / seconds : 0.0;
    logs.set("lr", lr);
    logs.set("seconds", seconds);
    logs.set("images_per_sec", images_per_sec);
    if (options.nonfinite == NonFinite::skip_step)
      logs.set("skipped_steps", static_cast<double>(skipped));

    if (mode != ProgressMode::none) {
      MetricList shown;
      for (const char* name : {"loss", "accuracy", "val_loss", "val_accuracy"})
        if (auto v = logs.find(name)) shown.emplace_back(name, *v);
      bar.finish(step, seconds, shown, images_per_sec);
    }
    history.epochs.push_back(logs);
    for (const auto& cb : options.callbacks) cb->on_epoch_end(epoch, history.epochs.back(), context);
    if (context.stop_training) {
      history.stopped_early = epoch + 1 < options.epochs;
      break;
    }
    if (stop_requested() && epoch + 1 < options.epochs) {
      interrupt(epoch + 1, 0);
      break;
    }
  }
  for (const auto& cb : options.callbacks) cb->on_train_end(context);
  if (profiler) history.profile = profiler->report();
  return history;
}

EvalResult evaluate(nn::Module& model, data::DataLoader& loader, const EvaluateOptions& options) {
  CK_CHECK(options.max_batches >= 0, "evaluate: max_batches must be >= 0, got ",
           options.max_batches);
  // A rank's shard of a small test set may be empty; the job's may not.
  const bool several_ranks = options.process_group && options.process_group->size() > 1;
  CK_CHECK(several_ranks || loader.num_batches() > 0, "evaluate: the loader yields no batch (",
           loader.dataset().size(), " examples)");
  const Device device = options.device.value_or(module_device(model));
  if (options.device) model.to(device);
  ModeGuard eval_mode(model, false);
  NoGradGuard no_grad;

  RunningMetrics metrics(device);
  const auto start = std::chrono::steady_clock::now();
  loader.start_epoch(0);
  std::int64_t batches = 0;
  while (options.max_batches == 0 || batches < options.max_batches) {
    std::optional<data::Batch> batch = loader.next();
    if (!batch) break;
    const Tensor images = batch->images.to(device);
    const Tensor labels = batch->labels.to(device);
    const Tensor logits = model(images);
    if (batches == 0) check_classes(logits, loader, "evaluate");
    const LossKind kind = resolve_loss(options.loss, logits);
    metrics.add(kind, logits, labels, compute_loss(kind, logits, labels));
    ++batches;
  }
  metrics.sum_over_ranks(options.process_group.get());
  CK_CHECK(metrics.examples() > 0, "evaluate: no rank's loader yielded a batch (",
           loader.dataset().size(), " examples)");
  EvalResult result;
  result.loss = metrics.loss();
  result.accuracy = metrics.accuracy();
  result.examples = metrics.examples();
  result.seconds = seconds_since(start);
  return result;
}

namespace {

Tensor predict_preprocessed(nn::Module& model, const Tensor& batch, const PredictOptions& options,
                            Device device) {
  const Tensor logits = model(batch.to(device));
  return class_probabilities(options.loss, logits).to(kCPU).to(DType::float32);
}

Tensor stack_preprocessed(const data::Preprocessing& preprocessing,
                          const std::vector<Tensor>& images, std::size_t begin, std::size_t end) {
  Tensor out;
  Shape first;
  for (std::size_t i = begin; i < end; ++i) {
    CK_CHECK(images[i].defined() && images[i].dim() == 3, "predict: image ", i,
             " must be [C, H, W], got ", images[i].defined() ? images[i].shape() : Shape{});
    const Tensor one = preprocessing.apply(images[i]);
    if (i == begin) {
      first = one.shape();
      out = Tensor::empty(Shape{static_cast<std::int64_t>(end - begin), first[0], first[1], first[2]},
                          TensorOptions(DType::float32));
    }
    CK_CHECK(one.shape() == first, "predict: after preprocessing, image ", i, " has shape ",
             one.shape(), " but image ", begin, " has ", first,
             "; images of different sizes need a Preprocessing with a resize");
    out.select(0, static_cast<std::int64_t>(i - begin)).copy_(one);
  }
  return out;
}

}  // namespace

Tensor predict(nn::Module& model, const data::Preprocessing& preprocessing,
               const std::vector<Tensor>& images, const PredictOptions& options) {
  CK_CHECK(options.batch_size >= 1, "predict: batch_size must be >= 1, got ", options.batch_size);
  CK_CHECK(!images.empty(), "predict: no images");
  const Device device = options.device.value_or(module_device(model));
  if (options.device) model.to(device);
  ModeGuard eval_mode(model, false);
  NoGradGuard no_grad;
  std::vector<Tensor> parts;
  const std::size_t step = static_cast<std::size_t>(options.batch_size);
  for (std::size_t begin = 0; begin < images.size(); begin += step) {
    const std::size_t end = std::min(images.size(), begin + step);
    parts.push_back(predict_preprocessed(
        model, stack_preprocessed(preprocessing, images, begin, end), options, device));
  }
  if (parts.size() == 1) return parts.front();
  const std::int64_t classes = parts.front().size(1);
  Tensor out = Tensor::empty(Shape{static_cast<std::int64_t>(images.size()), classes},
                             TensorOptions(DType::float32));
  std::int64_t row = 0;
  for (const Tensor& p : parts) {
    out.narrow(0, row, p.size(0)).copy_(p);
    row += p.size(0);
  }
  return out;
}

Tensor predict(nn::Module& model, const data::Preprocessing& preprocessing, const Tensor& images,
               const PredictOptions& options) {
  CK_CHECK(images.defined() && (images.dim() == 3 || images.dim() == 4),
           "predict: expected images [C, H, W] or [N, C, H, W], got ",
           images.defined() ? images.shape() : Shape{});
  if (images.dim() == 3) return predict(model, preprocessing, std::vector<Tensor>{images}, options);
  std::vector<Tensor> list;
  list.reserve(static_cast<std::size_t>(images.size(0)));
  for (std::int64_t i = 0; i < images.size(0); ++i) list.push_back(images.select(0, i));
  return predict(model, preprocessing, list, options);
}

namespace {

const data::Preprocessing& stored_preprocessing(const io::Checkpoint& checkpoint) {
  CK_CHECK(checkpoint.preprocessing.has_value(),
           "predict: the checkpoint stores no preprocessing, so the model's expected input is "
           "unknown; pass the Preprocessing it was trained with (or store it: "
           "io::make_checkpoint(model, &optimizer, loader.preprocessing()))");
  return *checkpoint.preprocessing;
}

}  // namespace

Tensor predict(nn::Module& model, const io::Checkpoint& checkpoint, const Tensor& images,
               const PredictOptions& options) {
  return predict(model, stored_preprocessing(checkpoint), images, options);
}

Tensor predict(nn::Module& model, const io::Checkpoint& checkpoint,
               const std::vector<Tensor>& images, const PredictOptions& options) {
  return predict(model, stored_preprocessing(checkpoint), images, options);
}

}  // namespace convkit::train
