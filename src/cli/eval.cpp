// `convkit eval CHECKPOINT --data ...`: loss and accuracy of a saved model on
// a data set's test split, preprocessed as the checkpoint says.
#include <cstdio>

#include "cli/arg_parser.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "convkit/core/error.h"
#include "convkit/data/data_loader.h"
#include "convkit/io/checkpoint.h"
#include "convkit/nn/module.h"
#include "convkit/ops/conv_algo.h"
#include "convkit/train/fit.h"

namespace convkit::cli {

constexpr const char* kEvalUsage =
    "usage: convkit eval CHECKPOINT [options]\n"
    "Test loss and accuracy of a checkpoint, preprocessed as it stores.\n"
    "  --data SPEC       as for train (default: the data set it was trained on)\n"
    "  --device D        cpu (default), sim, cuda, cuda:N\n"
    "  --algo A          convolution algorithm (default automatic): {algos}\n"
    "  --batch B         batch size (256)\n"
    "  --workers W       data loader threads (1)\n"
    "  --seed S          split seed for an image folder without train/test (default: the training seed)\n"
    "  --json            end with one line of JSON\n";

int run_eval(const Args& args) {
  if (help_requested(args)) {
    std::fputs(with_algo_names(kEvalUsage).c_str(), stdout);
    return 0;
  }
  const ParsedArgs p(args, "eval",
                     {{"data", true}, {"device", true}, {"algo", true}, {"batch", true},
                      {"workers", true}, {"seed", true}, {"json", false}});
  p.expect_positional(1, 1, "CHECKPOINT");
  const std::string path = p.positional()[0];
  const Device device = parse_device_arg(p.value_or("device", "cpu"));
  const std::string algo = p.value_or("algo", "automatic");
  apply_algo_arg(algo);
  const std::int64_t batch = p.int_or("batch", 256, 1);
  const auto workers = static_cast<int>(p.int_or("workers", 1, 0));

  const io::Checkpoint ck = io::load_checkpoint(path);
  CK_CHECK(ck.preprocessing.has_value(), "checkpoint '", path,
           "' stores no preprocessing, so its input format is unknown");
  // The data set defaults to the one the model was trained on; an image
  // folder is split with the training seed, so the test split is the same.
  const auto trained_on = ck.get_metadata("data");
  const auto data_text = p.value(std::string("data"));
  CK_CHECK(data_text || trained_on, "--data is required (the checkpoint does not say what "
                                    "it was trained on)");
  const DataSpec spec = parse_data_spec(data_text ? *data_text : *trained_on);
  std::uint64_t seed = 1;
  if (p.value("seed")) {
    seed = static_cast<std::uint64_t>(p.int_or("seed", 1, 0));
  } else if (const auto stored = ck.get_metadata("seed")) {
    try {
      seed = std::stoull(*stored);
    } catch (const std::exception&) {
      CK_FAIL("checkpoint '", path, "' has a malformed seed '", *stored, "'; pass --seed");
    }
  }
  const DataSplits splits = load_data(spec, seed);

  std::shared_ptr<nn::Module> model = io::build_model(ck);
  data::DataLoaderOptions opts;
  opts.batch_size = batch;
  opts.shuffle = false;
  opts.workers = workers;
  opts.preprocessing = *ck.preprocessing;
  data::DataLoader loader(splits.test, opts);
  train::EvaluateOptions eval_opts;
  eval_opts.device = device;
  const train::EvalResult r = train::evaluate(*model, loader, eval_opts);

  std::printf("%s on %s (%s): loss %.4f - accuracy %.4f (%lld images, %.1f s, %.0f images/s)\n",
              path.c_str(), spec.text.c_str(), device.str().c_str(), r.loss, r.accuracy,
              static_cast<long long>(r.examples), r.seconds, r.images_per_sec());
  if (p.flag("json")) {
    JsonLine line;
    line.add("command", "eval")
        .add("checkpoint", path)
        .add("model", ck.get_metadata("zoo").value_or(""))
        .add("data", spec.text)
        .add("device", device.str())
        .add("algo", algo)
        .add("batch", batch)
        .add("test_images", r.examples)
        .add("test_loss", r.loss)
        .add("test_accuracy", r.accuracy)
        .add("images_per_sec", r.images_per_sec())
        .add("seconds", r.seconds);
    std::printf("%s\n", line.str().c_str());
  }
  return 0;
}

}  // namespace convkit::cli
