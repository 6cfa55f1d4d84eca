// `convkit train MODEL`: trains a zoo model (or a model written in the spec
// text, --spec) on a data set, from scratch, from a checkpoint's weights
// (--init, optionally with --freeze) or from where a run stopped (--resume);
// reports the test loss and accuracy and the training speed, and (with --out)
// keeps a CSV log and checkpoints.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/arg_parser.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/train_ranks.h"
#include "cli/train_start.h"
#include "convkit/core/error.h"
#include "convkit/data/data_loader.h"
#include "convkit/models/zoo.h"
#include "convkit/nn/model_spec.h"
#include "convkit/nn/module.h"
#include "convkit/ops/conv_algo.h"
#include "convkit/ops/factory.h"
#include "convkit/optim/lr_scheduler.h"
#include "convkit/train/callbacks.h"
#include "convkit/io/checkpoint.h"
#include "convkit/train/fit.h"

namespace convkit::cli {

namespace {

// The first `limit` examples of a seeded shuffle, so a subset has every class.
std::shared_ptr<const data::Dataset> limit_examples(std::shared_ptr<const data::Dataset> d,
                                                    std::int64_t limit, std::uint64_t seed) {
  if (limit <= 0 || limit >= d->size()) return d;
  std::vector<std::int64_t> order = data::epoch_order(d->size(), true, seed, 0);
  order.resize(static_cast<std::size_t>(limit));
  return std::make_shared<data::Subset>(std::move(d), std::move(order));
}

// Where an interrupted epoch resumes. A checkpoint counts steps of its own
// run, `ranks x batch` images each, taken in epoch order (data::Shard
// interleaves the ranks); with other ranks or another batch the same images
// done are a different number of steps, rounded down: a few images of the
// epoch are then seen twice, none skipped.
std::int64_t resumed_step(const io::Checkpoint& ck, std::int64_t batch, int ranks) {
  if (ck.step == 0) return 0;
  const auto number = [&](const char* key) -> std::int64_t {
    const std::optional<std::string> v = ck.get_metadata(key);
    if (!v) return 0;  // a checkpoint of a one-rank run made before ranks were recorded
    std::int64_t n = 0;
    const auto [end, error] = std::from_chars(v->data(), v->data() + v->size(), n);
    CK_CHECK(error == std::errc() && end == v->data() + v->size() && n > 0, "--resume: the checkpoint's '",
             key, "' is '", *v, "', not a positive whole number");
    return n;
  };
  const std::int64_t saved_ranks = std::max<std::int64_t>(1, number("ranks"));
  const std::int64_t saved_batch = number("batch") > 0 ? number("batch") : batch;
  const std::int64_t images_done = ck.step * saved_batch * saved_ranks;
  return images_done / (batch * ranks);
}

std::string history_json(const train::History& history) {
  std::string out = "[";
  for (std::size_t i = 0; i < history.epochs.size(); ++i) {
    JsonLine line;
    line.add("epoch", history.epochs[i].epoch + 1);
    for (const auto& [name, value] : history.epochs[i].values) line.add(name, value);
    if (i) out.append(", ");
    out.append(line.str());
  }
  return out + "]";
}

}  // namespace

constexpr const char* kTrainUsage =
    "usage: convkit train MODEL [options]\n"
    "       convkit train --spec FILE [options]\n"
    "Trains a zoo model, then reports test loss, accuracy and training images/s.\n"
    "  --spec FILE       train the model FILE describes in the model-spec text (docs/io.md)\n"
    "                    instead of a zoo MODEL; its input is the data's image size\n"
    "  --data SPEC       fashion-mnist[:DIR] (default), cifar10:DIR, folder:DIR\n"
    "  --device D        cpu (default), sim, cuda, cuda:N\n"
    "  --algo A          convolution algorithm (default automatic): {algos}\n"
    "  --float32-precision P  highest (default: strict float32), high (tf32) or medium (bf16)\n"
    "                    tensor-core products on a GPU backend; the cpu ignores it\n"
    "  --batch B         batch size (64)\n"
    "  --epochs E        epochs (5)\n"
    "  --lr LR           learning rate (0.001; sgd 0.01)\n"
    "  --optimizer O     adam (default), adamw, sgd (momentum 0.9), rmsprop\n"
    "  --schedule S      cosine (default, decays to 0 over the run) or constant\n"
    "  --augment         random shifts and flips (and rotation, shear, zoom for folders)\n"
    "  --workers W       data loader threads (1)\n"
    "  --seed S          seed of the weights, shuffles and augmentation (1)\n"
    "  --limit N         train on N images (a seeded subset); --test-limit N likewise\n"
    "  --no-validation   skip the validation pass after each epoch\n"
    "  --out DIR         write log.csv, log.jsonl, last.ckpt, best.ckpt (and profile.txt)\n"
    "  --resume CKPT     continue the run that saved CKPT (its last.ckpt) with the same options;\n"
    "                    SIGINT or SIGTERM stops a run at the end of a step and saves last.ckpt\n"
    "  --init CKPT       fine-tune: start from CKPT's weights (shapes must match) with a fresh\n"
    "                    optimizer at epoch 0\n"
    "  --new-head        with --init: a last layer whose shape differs (another class count)\n"
    "                    starts afresh instead of being an error\n"
    "  --freeze LAYER    keep the parameters up to and including LAYER fixed (an index of the\n"
    "                    model's top-level layers, or a path such as features.3)\n"
    "  --profile         per-layer forward/backward times\n"
    "  --progress P      auto (default: a bar on a terminal, else a line per epoch), bar, lines, none\n"
    "  --json            end with one line of JSON\n"
    "Data-parallel: mpirun -np N convkit train MODEL [options] trains on N ranks, each\n"
    "reading its own shard with --batch images per step (N x B in all); rank 0 prints\n"
    "and writes --out; --resume works with any number of ranks (docs/distributed.md).\n";

namespace {

int train_on(const Args& args, const std::shared_ptr<dist::ProcessGroup>& group);

}  // namespace

int run_train(const Args& args) {
  if (help_requested(args)) {
    std::fputs(with_algo_names(kTrainUsage).c_str(), stdout);
    return 0;
  }
  const std::shared_ptr<dist::ProcessGroup> group = join_training_job();
  if (!group || group->size() == 1) return train_on(args, group);
  try {
    return train_on(args, group);
  } catch (const Error& e) {
    // Every rank may fail, or one alone (its shard held the corrupt file).
    std::string what = e.what();
    if (what.rfind("train: ", 0) == 0) what.erase(0, 7);
    throw Error("train: rank " + std::to_string(group->rank()) + " of " +
                std::to_string(group->size()) + ": " + what);
  }
}

namespace {

int train_on(const Args& args, const std::shared_ptr<dist::ProcessGroup>& group) {
  const int rank = group ? group->rank() : 0;
  const int ranks = group ? group->size() : 1;
  const auto started = std::chrono::steady_clock::now();
  const ParsedArgs p(args, "train",
                     {{"data", true}, {"device", true}, {"algo", true}, {"float32-precision", true}, {"batch", true},
                      {"epochs", true}, {"lr", true}, {"optimizer", true}, {"schedule", true},
                      {"augment", false}, {"workers", true}, {"seed", true}, {"out", true},
                      {"profile", false}, {"json", false}, {"no-validation", false},
                      {"limit", true}, {"test-limit", true}, {"progress", true},
                      {"resume", true}, {"init", true}, {"new-head", false}, {"freeze", true},
                      {"spec", true}});
  const auto spec_file = p.value("spec");
  if (spec_file) {
    CK_CHECK(p.positional().empty(), "train: give a zoo MODEL or --spec FILE, not both (got MODEL '",
             p.positional().front(), "' and --spec ", *spec_file, ")");
  } else {
    p.expect_positional(1, 1, "MODEL (one of the zoo's models; see 'convkit summary') or --spec FILE");
  }
  const std::string model_name = spec_file ? *spec_file : p.positional()[0];
  const models::ModelInfo* info = spec_file ? nullptr : &models::info(model_name);
  const auto resume = p.value("resume");
  const auto init = p.value("init");
  CK_CHECK(!(resume && init), "train: --resume continues a run and --init starts a new one from "
           "weights; give one of them");
  CK_CHECK(init || !p.flag("new-head"), "train: --new-head only applies with --init CKPT");

  const DataSpec spec = parse_data_spec(p.value_or("data", "fashion-mnist"));
  const RankDevice placed = choose_rank_device(parse_device_arg(p.value_or("device", "cpu")), group);
  const Device device = placed.device;
  const std::string algo = p.value_or("algo", "automatic");
  apply_algo_arg(algo);
  const std::string precision = apply_float32_precision_arg(p.value("float32-precision"));
  const std::int64_t batch = p.int_or("batch", 64, 1);
  const std::int64_t epochs = p.int_or("epochs", 5, 1);
  const std::string optimizer_name = p.value_or("optimizer", "adam");
  const double lr = p.real_or("lr", default_learning_rate(optimizer_name), 0.0);
  const std::string schedule = p.value_or("schedule", "cosine");
  CK_CHECK(schedule == "constant" || schedule == "cosine",
           "train: --schedule must be constant or cosine, got '", schedule, "'");
  const int workers = workers_arg(p);
  const auto seed = static_cast<std::uint64_t>(p.int_or("seed", 1, 0));
  const std::string progress = p.value_or("progress", "auto");
  CK_CHECK(progress == "auto" || progress == "bar" || progress == "lines" || progress == "none",
           "train: --progress must be auto, bar, lines or none, got '", progress, "'");
  const bool json = p.flag("json");

  manual_seed(seed);
  // A spec file is read before the data, so that its errors come first.
  std::shared_ptr<nn::Module> model = spec_file ? nn::build_module_from_file(*spec_file) : nullptr;
  DataSplits splits = load_data(spec, seed);
  splits.train = limit_examples(splits.train, p.int_or("limit", 0, 1), seed);
  splits.test = limit_examples(splits.test, p.int_or("test-limit", 0, 1), seed + 1);
  const std::int64_t classes = splits.train->num_classes();
  Shape input_shape;
  if (spec_file) {
    input_shape = splits.train->image_shape();
    CK_CHECK(input_shape.rank() == 3 && input_shape[1] > 0 && input_shape[2] > 0, "train: --spec ",
             *spec_file, ": the images of ", spec.text, " differ in size, so the model's input size is "
             "unknown; use a data set of one image size");
  } else {
    models::ModelOptions model_options;
    if (info->loss == models::LossKind::sigmoid_bce) {
      CK_CHECK(classes == 2, "train: ", model_name, " is a binary classifier (one sigmoid output) but ",
               spec.text, " has ", classes, " classes");
    } else {
      model_options.num_classes = classes;
    }
    model = models::create(model_name, model_options);
    input_shape = info->input_shape;
  }
  if (init)
    load_start_weights(*model, io::load_checkpoint(*init), "--init " + *init,
                       p.flag("new-head") ? HeadMismatch::replace : HeadMismatch::suggest_new_head);
  std::optional<io::Checkpoint> resumed;
  if (resume) {
    resumed = io::load_checkpoint(*resume);
    load_start_weights(*model, *resumed, "--resume " + *resume, HeadMismatch::refuse);
  }
  std::vector<std::string> frozen;
  if (const auto layer = p.value("freeze")) frozen = freeze_through(*model, *layer);
  model->to(device);

  const data::Preprocessing preprocessing = model_preprocessing(input_shape);
  data::DataLoaderOptions train_opts;
  train_opts.batch_size = batch;
  train_opts.seed = seed;
  train_opts.workers = workers;
  train_opts.preprocessing = preprocessing;
  if (p.flag("augment")) train_opts.augmentation = default_augmentation(spec.kind);
  data::DataLoaderOptions test_opts = train_opts;
  test_opts.batch_size = std::max<std::int64_t>(batch, 256);
  test_opts.shuffle = false;
  test_opts.augmentation = data::Augmentation();
  // Training shards are padded to equal length (every rank takes the same
  // number of steps); the test set's are not, so each image counts once.
  train_opts.shard = data::Shard{rank, ranks, data::ShardPadding::repeat};
  test_opts.shard = data::Shard{rank, ranks, data::ShardPadding::none};
  data::DataLoader train_loader(splits.train, train_opts);
  data::DataLoader test_loader(splits.test, test_opts);

  std::unique_ptr<optim::Optimizer> optimizer =
      make_optimizer(optimizer_name, trainable_parameters(*model), lr);
  std::shared_ptr<optim::LRScheduler> scheduler;
  if (schedule == "cosine")  // decays to zero over the run: the last epochs fine-tune with small steps
    scheduler = std::make_shared<optim::CosineAnnealingLR>(*optimizer, epochs);
  train::FitOptions fit;
  fit.epochs = epochs;
  fit.stop_on_signal = true;
  if (resumed) {
    // The schedule above holds the base rates; the saved optimizer state
    // holds the decayed ones, which set_last_epoch rewrites.
    const io::Checkpoint& ck = *resumed;
    CK_CHECK(!ck.optimizer_spec.empty(), "train: --resume ", *resume,
             " holds no optimizer state, so the run cannot continue from it");
    CK_CHECK(ck.epoch < epochs, "train: --resume ", *resume, " has finished ", ck.epoch,
             " of the run's epochs; --epochs must be more than that, got ", epochs);
    optimizer->load_state_dict(ck.optimizer_state);
    io::restore_generator(ck);
    if (scheduler) scheduler->set_last_epoch(ck.epoch);
    fit.initial_epoch = ck.epoch;
    fit.initial_step = std::min(resumed_step(ck, batch, ranks), train_loader.num_batches() - 1);
  }
  fit.process_group = group;
  fit.gradient_group = placed.gradient_group;
  fit.device = device;
  fit.profile = p.flag("profile");
  if (!p.flag("no-validation")) fit.validation = &test_loader;
  fit.progress = progress == "bar"     ? train::ProgressMode::bar
                 : progress == "lines" ? train::ProgressMode::lines
                 : progress == "none"  ? train::ProgressMode::none
                                       : train::ProgressMode::automatic;
  if (scheduler) fit.callbacks.push_back(std::make_shared<train::LRSchedulerCallback>(scheduler));
  const auto out_dir = p.value("out");
  if (out_dir && rank == 0) {  // rank 0 writes for the job
    create_output_dir(*out_dir);
    fit.callbacks.push_back(std::make_shared<train::CSVLogger>(
        (std::filesystem::path(*out_dir) / "log.csv").string(), resume.has_value()));
    fit.callbacks.push_back(std::make_shared<train::JsonLinesLogger>(
        (std::filesystem::path(*out_dir) / "log.jsonl").string(), resume.has_value()));
    train::ModelCheckpointOptions ck;
    ck.directory = *out_dir;
    ck.monitor = fit.validation ? "val_accuracy" : "accuracy";
    ck.resume = resume.has_value();
    ck.metadata = {{spec_file ? "spec_file" : "zoo", model_name},
                   {"data", spec.text},
                   {"seed", std::to_string(seed)},
                   {"classes", join_lines(splits.class_names)},
                   {"ranks", std::to_string(ranks)},
                   {"batch", std::to_string(batch)}};
    if (init) ck.metadata.emplace_back("init", *init);
    if (!frozen.empty()) ck.metadata.emplace_back("frozen", *p.value("freeze"));
    fit.callbacks.push_back(std::make_shared<train::ModelCheckpoint>(ck));
  }

  std::printf("model %s (%lld parameters) on %s, conv algorithm %s\n", model_name.c_str(),
              static_cast<long long>(model->parameter_count()), device.str().c_str(), algo.c_str());
  std::printf("data %s: %lld train / %lld test images, %lld classes%s\n", spec.text.c_str(),
              static_cast<long long>(splits.train->size()),
              static_cast<long long>(splits.test->size()), static_cast<long long>(classes),
              p.flag("augment") ? ", augmented" : "");
  std::printf("%s lr %g (%s), batch %lld, %lld epochs, seed %llu, %d workers\n",
              optimizer_name.c_str(), lr, schedule.c_str(), static_cast<long long>(batch),
              static_cast<long long>(epochs), static_cast<unsigned long long>(seed), workers);
  if (ranks > 1)
    std::printf("data-parallel: %d ranks (%s), batch %lld per rank, %lld per step in all\n", ranks,
                group->backend().c_str(), static_cast<long long>(batch),
                static_cast<long long>(batch * ranks));
  if (!placed.note.empty()) std::printf("%s\n", placed.note.c_str());  // rank 0's alone reaches stdout
  if (init) std::printf("weights from %s%s\n", init->c_str(), p.flag("new-head") ? " (a fresh last layer)" : "");
  if (!frozen.empty())
    std::printf("frozen through layer %s: %zu parameter tensors (%s ... %s)\n", p.value("freeze")->c_str(),
                frozen.size(), frozen.front().c_str(), frozen.back().c_str());
  std::fflush(stdout);

  const train::History history = train::fit(*model, *optimizer, train_loader, fit);
  if (history.interrupted) {
    const train::Interruption& at = *history.interrupted;
    std::fprintf(stderr, "train: stopped by %s after step %lld of epoch %lld%s\n",
                 at.signal == SIGTERM ? "SIGTERM" : at.signal == SIGINT ? "SIGINT" : "a stop request",
                 static_cast<long long>(at.step), static_cast<long long>(at.epoch + 1),
                 out_dir ? ("; continue with --resume " + (std::filesystem::path(*out_dir) / "last.ckpt").string())
                               .c_str()
                         : "");
    std::fflush(stdout);
    return 128 + (at.signal ? at.signal : SIGINT);
  }
  train::EvaluateOptions test_options;
  test_options.process_group = group;
  const train::EvalResult test = train::evaluate(*model, test_loader, test_options);

  double train_seconds = 0, train_images = 0;
  for (const train::EpochLogs& e : history.epochs) {
    train_seconds += e.at("seconds");
    train_images += e.at("seconds") * e.at("images_per_sec");
  }
  const double train_ips = train_seconds > 0 ? train_images / train_seconds : 0.0;
  std::printf("test: loss %.4f - accuracy %.4f (%lld images, %.1f s, %.0f images/s)\n", test.loss,
              test.accuracy, static_cast<long long>(test.examples), test.seconds,
              test.images_per_sec());
  std::printf("train: %.0f images/s, %.1f s for %zu epoch(s)%s\n", train_ips, train_seconds,
              history.epochs.size(), history.stopped_early ? " (stopped early)" : "");
  if (history.profile) {
    const std::string table = history.profile->table();
    std::printf("\n%s", table.c_str());
    if (out_dir) {
      std::ofstream f(std::filesystem::path(*out_dir) / "profile.txt");
      f << table;
    }
  }
  if (out_dir) std::printf("saved %s/{last,best}.ckpt and log.csv\n", out_dir->c_str());

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (json) {
    const train::EpochLogs& last = history.last();
    JsonLine line;
    line.add("command", "train")
        .add("model", model_name)
        .add("data", spec.text)
        .add("device", device.str())
        .add("algo", algo)
        .add("float32_precision", precision)
        .add("optimizer", optimizer_name)
        .add("lr", lr)
        .add("schedule", schedule)
        .add("epochs", static_cast<std::int64_t>(history.epochs.size()))
        .add("batch", batch)
        .add("ranks", static_cast<std::int64_t>(ranks))
        .add("seed", static_cast<std::int64_t>(seed))
        .add("augment", p.flag("augment"))
        .add("train_images", splits.train->size())
        .add("train_images_per_sec", train_ips)
        .add("train_seconds", train_seconds)
        .add("train_loss", last.at("loss"))
        .add("train_accuracy", last.at("accuracy"))
        .add("test_images", test.examples)
        .add("test_loss", test.loss)
        .add("test_accuracy", test.accuracy)
        .add("seconds", seconds)
        .add_raw("history", history_json(history));
    std::printf("%s\n", line.str().c_str());
  }
  return 0;
}

}  // namespace

}  // namespace convkit::cli
