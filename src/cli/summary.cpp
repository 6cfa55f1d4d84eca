// `convkit summary MODEL`: the Keras-style layer table of a zoo model, or of
// the model in a checkpoint file.
#include <cstdio>
#include <filesystem>

#include "cli/arg_parser.h"
#include "cli/commands.h"
#include "cli/summary_json.h"
#include "convkit/core/error.h"
#include "convkit/io/checkpoint.h"
#include "convkit/models/zoo.h"
#include "convkit/nn/module.h"
#include "convkit/nn/summary.h"

namespace convkit::cli {

constexpr const char* kSummaryUsage =
    "usage: convkit summary MODEL|CHECKPOINT [--input C,H,W] [--json]\n"
    "The layer table (output shapes, parameter counts) of a zoo model or a checkpoint.\n"
    "  --json   one line of JSON instead: every row with its input and output shapes,\n"
    "           parameter counts and structural options (kernel, stride, padding, ...)\n";

int run_summary(const Args& args) {
  if (help_requested(args)) {
    std::fputs(kSummaryUsage, stdout);
    return 0;
  }
  const ParsedArgs parsed(args, "summary", {{"input", true}, {"json", false}});
  parsed.expect_positional(1, 1, "MODEL (a zoo name or a checkpoint file)");
  const std::string& what = parsed.positional()[0];

  std::shared_ptr<nn::Module> model;
  Shape input;
  std::string title;
  if (std::filesystem::is_regular_file(what)) {
    const io::Checkpoint ck = io::load_checkpoint(what);
    model = io::build_model(ck);
    const auto zoo = ck.get_metadata("zoo");
    if (zoo) input = models::info(*zoo).input_shape;
    title = "checkpoint " + what + (zoo ? " (" + *zoo + ")" : "");
  } else {
    const models::ModelInfo& info = models::info(what);  // Error lists the known names
    model = models::create(what);
    input = info.input_shape;
    title = info.name + ": " + info.description;
  }
  if (const auto text = parsed.value("input")) {
    // --input C,H,W overrides (or supplies) the input shape.
    std::vector<std::int64_t> dims;
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = text->find(',', start);
      const std::string part = text->substr(start, comma - start);
      std::size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(part, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      CK_CHECK(used == part.size() && !part.empty() && v > 0, "--input expects C,H,W, got '",
               *text, "'");
      dims.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    CK_CHECK(dims.size() == 3, "--input expects C,H,W, got '", *text, "'");
    input = Shape(dims);
  }
  CK_CHECK(input.rank() == 3, "the checkpoint does not name a zoo model, so its input "
                              "shape is unknown; pass --input C,H,W");
  if (parsed.flag("json")) {
    std::printf("%s\n", summary_json(title, *model, input).c_str());
  } else {
    std::printf("%s\n%s", title.c_str(), nn::summary(*model, input).c_str());
  }
  return 0;
}

}  // namespace convkit::cli
