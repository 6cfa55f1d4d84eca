// `convkit inspect CHECKPOINT`: what a checkpoint holds, without building or
// running the model: its spec, weights, preprocessing, classes, optimizer,
// progress, the logged metrics of its epoch and any other metadata.
// `convkit export CHECKPOINT --safetensors OUT`: its weights as safetensors,
// under the state_dict names PyTorch's modules use ("0.weight", ...).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "cli/arg_parser.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "convkit/core/error.h"
#include "convkit/io/checkpoint.h"
#include "convkit/io/safetensors.h"

namespace convkit::cli {

namespace {

constexpr const char* kInspectUsage =
    "usage: convkit inspect CHECKPOINT [--json]\n"
    "The model spec, weights, preprocessing, classes, optimizer, epoch, step, logged metrics\n"
    "and metadata of a checkpoint.\n"
    "  --json            one line of JSON instead\n";

constexpr const char* kExportUsage =
    "usage: convkit export CHECKPOINT --safetensors OUT\n"
    "Writes the checkpoint's weights (its model state_dict) to OUT as safetensors, which\n"
    "PyTorch reads with safetensors.torch.load_file; the metadata holds the model spec and\n"
    "the class names.\n";

constexpr const char* kLogPrefix = "logs.";

bool is_log(const std::string& key) { return key.rfind(kLogPrefix, 0) == 0; }

// Appends `item` to a list separated by `separator`.
void append(std::string& list, const std::string& item, const char* separator) {
  if (!list.empty()) list += separator;
  list += item;
}

// Preprocessing::to_string() is a versioned multi-line format; one line of
// its settings reads better in a listing.
std::string one_line(const data::Preprocessing& pre) {
  std::string out;
  const std::vector<std::string> lines = split_lines(pre.to_string());
  for (std::size_t i = 1; i < lines.size(); ++i)
    if (!lines[i].empty()) append(out, lines[i], ", ");
  return out.empty() ? "identity" : out;
}

std::int64_t element_count(const StateDict& state) {
  std::int64_t n = 0;
  for (const auto& [name, t] : state) n += t.numel();
  return n;
}

}  // namespace

int run_inspect(const Args& args) {
  if (help_requested(args)) {
    std::fputs(kInspectUsage, stdout);
    return 0;
  }
  const ParsedArgs p(args, "inspect", {{"json", false}});
  p.expect_positional(1, 1, "CHECKPOINT");
  const std::string path = p.positional()[0];
  const io::Checkpoint ck = io::load_checkpoint(path);
  const std::vector<std::string> classes =
      ck.get_metadata("classes") ? split_lines(*ck.get_metadata("classes")) : std::vector<std::string>{};
  const bool interrupted = ck.get_metadata("interrupted") == "true";

  if (p.flag("json")) {
    JsonLine metrics, metadata;
    for (const auto& [key, value] : ck.metadata) {
      if (is_log(key)) {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (!value.empty() && *end == '\0') metrics.add(key.substr(std::string(kLogPrefix).size()), v);
      } else if (key != "classes") {
        metadata.add(key, value);
      }
    }
    std::string class_list;
    for (const std::string& c : classes) append(class_list, json_string(c), ",");
    JsonLine line;
    line.add("command", "inspect")
        .add("checkpoint", path)
        .add("model_spec", ck.model_spec)
        .add("tensors", static_cast<std::int64_t>(ck.model_state.size()))
        .add("parameters", element_count(ck.model_state))
        .add("preprocessing", ck.preprocessing ? ck.preprocessing->to_string() : std::string())
        .add_raw("classes", "[" + class_list + "]")
        .add("optimizer_spec", ck.optimizer_spec)
        .add("epoch", ck.epoch)
        .add("step", ck.step)
        .add("interrupted", interrupted)
        .add_raw("metrics", metrics.str())
        .add_raw("metadata", metadata.str());
    std::printf("%s\n", line.str().c_str());
    return 0;
  }

  std::printf("checkpoint     %s (%llu bytes)\n", path.c_str(),
              static_cast<unsigned long long>(std::filesystem::file_size(path)));
  std::printf("model          %s\n", ck.model_spec.c_str());
  std::printf("weights        %lld values in %zu tensors\n", static_cast<long long>(element_count(ck.model_state)),
              ck.model_state.size());
  std::printf("preprocessing  %s\n", ck.preprocessing ? one_line(*ck.preprocessing).c_str() : "(none stored)");
  std::string class_text;
  for (const std::string& c : classes) append(class_text, c, ", ");
  std::printf("classes        %s\n",
              classes.empty() ? "(no names stored)" : (std::to_string(classes.size()) + ": " + class_text).c_str());
  std::printf("optimizer      %s\n", ck.optimizer_spec.empty() ? "(no state stored)" : ck.optimizer_spec.c_str());
  std::printf("progress       %lld epochs done, step %lld%s\n", static_cast<long long>(ck.epoch),
              static_cast<long long>(ck.step), interrupted ? " (interrupted: resume with --resume)" : "");
  std::string metrics;
  for (const auto& [key, value] : ck.metadata)
    if (is_log(key)) append(metrics, key.substr(std::string(kLogPrefix).size()) + " " + value, " - ");
  std::printf("metrics        %s\n", metrics.empty() ? "(none logged)" : metrics.c_str());
  for (const auto& [key, value] : ck.metadata)
    if (!is_log(key) && key != "classes" && key != "interrupted")
      std::printf("metadata       %s = %s\n", key.c_str(), value.c_str());
  return 0;
}

int run_export(const Args& args) {
  if (help_requested(args)) {
    std::fputs(kExportUsage, stdout);
    return 0;
  }
  const ParsedArgs p(args, "export", {{"safetensors", true}});
  p.expect_positional(1, 1, "CHECKPOINT");
  const auto out = p.value("safetensors");
  CK_CHECK(out, "--safetensors OUT is required (the file to write)");
  const io::Checkpoint ck = io::load_checkpoint(p.positional()[0]);
  std::map<std::string, std::string> metadata = {{"format", "pt"}, {"convkit_model_spec", ck.model_spec}};
  if (const auto classes = ck.get_metadata("classes")) metadata["convkit_classes"] = *classes;
  io::save_safetensors(*out, ck.model_state, metadata);
  std::printf("wrote %s: %zu tensors, %lld values\n", out->c_str(), ck.model_state.size(),
              static_cast<long long>(element_count(ck.model_state)));
  return 0;
}

}  // namespace convkit::cli
