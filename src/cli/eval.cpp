// `convkit eval CHECKPOINT --data ...`: loss and accuracy of a saved model on
// a data set's test split, preprocessed as the checkpoint says.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

namespace {

// The data's labels renumbered as the checkpoint's classes.
class RelabeledDataset final : public data::Dataset {
 public:
  RelabeledDataset(std::shared_ptr<const data::Dataset> base, std::vector<std::int64_t> to,
                   std::vector<std::string> names)
      : base_(std::move(base)), to_(std::move(to)), names_(std::move(names)) {}
  std::int64_t size() const override { return base_->size(); }
  data::Example get(std::int64_t index) const override {
    data::Example e = base_->get(index);
    e.label = to_[static_cast<std::size_t>(e.label)];
    return e;
  }
  std::int64_t num_classes() const override { return static_cast<std::int64_t>(names_.size()); }
  Shape image_shape() const override { return base_->image_shape(); }
  std::vector<std::string> class_names() const override { return names_; }

 private:
  std::shared_ptr<const data::Dataset> base_;
  std::vector<std::int64_t> to_;
  std::vector<std::string> names_;
};

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return "(" + out + ")";
}

// "a=cat,b=dog" as {a: cat, b: dog}.
std::map<std::string, std::string> parse_class_map(const std::string& text) {
  std::map<std::string, std::string> map;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string pair = text.substr(start, comma - start);
    const std::size_t eq = pair.find('=');
    CK_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < pair.size(), "--class-map: '", pair,
             "' is not DATA_CLASS=CHECKPOINT_CLASS (the whole option: '", text, "')");
    CK_CHECK(map.emplace(pair.substr(0, eq), pair.substr(eq + 1)).second, "--class-map: class '",
             pair.substr(0, eq), "' is mapped twice");
    start = comma + 1;
  }
  return map;
}

// A model scores the classes it was trained on, by index. Data whose classes
// are named otherwise, or ordered otherwise, would be scored against the
// wrong labels and give a meaningless accuracy, so the names must match, or
// --class-map must say which data class is which checkpoint class.
std::shared_ptr<const data::Dataset> match_classes(std::shared_ptr<const data::Dataset> test,
                                                   const std::vector<std::string>& data_names,
                                                   const io::Checkpoint& ck, const std::string& path,
                                                   const std::optional<std::string>& map_text) {
  const auto stored = ck.get_metadata("classes");
  if (!stored) {
    CK_CHECK(!map_text, "--class-map: checkpoint '", path, "' records no class names to map to");
    std::fprintf(stderr, "eval: checkpoint '%s' records no class names; labels are taken as they are\n",
                 path.c_str());
    return test;
  }
  const std::vector<std::string> ck_names = split_lines(*stored);
  std::vector<std::string> names = data_names;
  if (names.empty())
    for (std::int64_t c = 0; c < test->num_classes(); ++c) names.push_back(std::to_string(c));
  const std::map<std::string, std::string> map = map_text ? parse_class_map(*map_text) : std::map<std::string, std::string>{};
  for (const auto& [from, to] : map)
    CK_CHECK(std::find(names.begin(), names.end(), from) != names.end(), "--class-map: '", from,
             "' is not a class of the data ", listed(names));
  std::vector<std::int64_t> to(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto mapped = map.find(names[i]);
    const std::string& target = mapped == map.end() ? names[i] : mapped->second;
    const auto at = std::find(ck_names.begin(), ck_names.end(), target);
    CK_CHECK(at != ck_names.end(), "the data's class '", names[i], "'",
             mapped == map.end() ? "" : " (mapped to '" + target + "')",
             " is not a class of checkpoint '", path, "': it has ", listed(ck_names), ", the data has ",
             listed(names), "; name the correspondence with --class-map DATA=CHECKPOINT,...");
    to[i] = at - ck_names.begin();
  }
  bool identity = names.size() == ck_names.size();
  for (std::size_t i = 0; identity && i < to.size(); ++i) identity = to[i] == static_cast<std::int64_t>(i);
  if (identity) return test;
  return std::make_shared<RelabeledDataset>(std::move(test), std::move(to), ck_names);
}

}  // namespace

constexpr const char* kEvalUsage =
    "usage: convkit eval CHECKPOINT [options]\n"
    "Test loss and accuracy of a checkpoint, preprocessed as it stores.\n"
    "  --data SPEC       as for train (default: the data set it was trained on)\n"
    "  --device D        cpu (default), sim, cuda, cuda:N\n"
    "  --algo A          convolution algorithm (default automatic): {algos}\n"
    "  --batch B         batch size (256)\n"
    "  --workers W       data loader threads (1)\n"
    "  --seed S          split seed for an image folder without train/test (default: the training seed)\n"
    "  --class-map M     DATA=CKPT,...: which checkpoint class each data class is, when the\n"
    "                    names differ (data whose class names differ is refused otherwise)\n"
    "  --json            end with one line of JSON\n";

int run_eval(const Args& args) {
  if (help_requested(args)) {
    std::fputs(with_algo_names(kEvalUsage).c_str(), stdout);
    return 0;
  }
  const ParsedArgs p(args, "eval",
                     {{"data", true}, {"device", true}, {"algo", true}, {"batch", true},
                      {"workers", true}, {"seed", true}, {"class-map", true}, {"json", false}});
  p.expect_positional(1, 1, "CHECKPOINT");
  const std::string path = p.positional()[0];
  const Device device = parse_device_arg(p.value_or("device", "cpu"));
  const std::string algo = p.value_or("algo", "automatic");
  apply_algo_arg(algo);
  const std::int64_t batch = p.int_or("batch", 256, 1);
  const int workers = workers_arg(p);

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
  data::DataLoader loader(match_classes(splits.test, splits.class_names, ck, path, p.value("class-map")), opts);
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
        .add("model", ck.get_metadata("zoo").value_or(ck.get_metadata("spec_file").value_or("")))
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
