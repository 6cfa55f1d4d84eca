// `convkit predict CHECKPOINT IMAGE...`: class probabilities of PNG / JPEG
// files, decoded by the data layer and preprocessed exactly as in training
// (the checkpoint stores the preprocessing).
#include <algorithm>
#include <cstdio>
#include <numeric>

#include "cli/arg_parser.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "convkit/core/error.h"
#include "convkit/data/image_folder.h"
#include "convkit/io/checkpoint.h"
#include "convkit/nn/module.h"
#include "convkit/train/fit.h"

namespace convkit::cli {

constexpr const char* kPredictUsage =
    "usage: convkit predict CHECKPOINT IMAGE... [options]\n"
    "Class probabilities of PNG / JPEG files, preprocessed as the checkpoint stores.\n"
    "  --device D        cpu (default), sim, cuda, cuda:N\n"
    "  --top K           print the K most likely classes (default: all)\n"
    "  --json            end with one line of JSON\n";

int run_predict(const Args& args) {
  if (help_requested(args)) {
    std::fputs(kPredictUsage, stdout);
    return 0;
  }
  const ParsedArgs p(args, "predict", {{"device", true}, {"top", true}, {"json", false}});
  p.expect_positional(2, static_cast<std::size_t>(-1), "CHECKPOINT IMAGE...");
  const std::string path = p.positional()[0];
  const Device device = parse_device_arg(p.value_or("device", "cpu"));
  const std::int64_t top = p.int_or("top", 0, 0);

  const io::Checkpoint ck = io::load_checkpoint(path);
  std::vector<std::string> files(p.positional().begin() + 1, p.positional().end());
  std::vector<Tensor> images;
  for (const std::string& f : files) images.push_back(data::load_image(f));

  std::shared_ptr<nn::Module> model = io::build_model(ck);
  train::PredictOptions opts;
  opts.device = device;
  const Tensor probs = train::predict(*model, ck, images, opts);  // [N, classes]
  const std::int64_t classes = probs.size(1);
  std::vector<std::string> names;
  if (const auto stored = ck.get_metadata("classes")) names = split_lines(*stored);
  if (static_cast<std::int64_t>(names.size()) != classes) {
    names.clear();
    for (std::int64_t c = 0; c < classes; ++c) names.push_back(std::to_string(c));
  }
  const std::vector<float> values = probs.contiguous().to_vector<float>();
  const std::int64_t shown = top > 0 ? std::min(top, classes) : classes;

  std::string json_items;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const float* row = values.data() + static_cast<std::int64_t>(i) * classes;
    std::vector<std::int64_t> order(static_cast<std::size_t>(classes));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int64_t a, std::int64_t b) { return row[a] > row[b]; });
    const auto best = static_cast<std::size_t>(order[0]);
    std::printf("%s: %s (%.4f)\n", files[i].c_str(), names[best].c_str(), row[best]);
    std::string probs_json = "{";
    for (std::int64_t k = 0; k < shown; ++k) {
      const auto c = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
      std::printf("  %-20s %.4f\n", names[c].c_str(), row[c]);
    }
    for (std::int64_t c = 0; c < classes; ++c) {
      if (c) probs_json.append(", ");
      probs_json.append(json_string(names[static_cast<std::size_t>(c)])).append(": ");
      probs_json.append(json_number(row[c]));
    }
    probs_json.append("}");
    JsonLine item;
    item.add("image", files[i]).add("class", names[best]).add("probability",
                                                              static_cast<double>(row[best]));
    item.add_raw("probabilities", probs_json);
    if (i) json_items.append(", ");
    json_items.append(item.str());
  }
  if (p.flag("json")) {
    JsonLine line;
    line.add("command", "predict").add("checkpoint", path).add("device", device.str());
    line.add_raw("predictions", "[" + json_items + "]");
    std::printf("%s\n", line.str().c_str());
  }
  return 0;
}

}  // namespace convkit::cli
