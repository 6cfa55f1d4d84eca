// Entry point of the `convkit` tool: dispatches to one command and turns any
// convkit::Error into a one-line message and exit code 2.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "convkit/core/error.h"
#include "convkit/version.h"

namespace convkit::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
      {"devices", "list the backends (cpu, sim, cuda) and whether each is usable here", run_devices},
      {"summary", "layer table of a zoo model or checkpoint: summary MODEL", run_summary},
      {"train", "train a zoo model: train MODEL --data fashion-mnist|cifar10:DIR|folder:DIR ...",
       run_train},
      {"eval", "test loss and accuracy of a checkpoint: eval CHECKPOINT --data ...", run_eval},
      {"predict", "class probabilities of images: predict CHECKPOINT IMAGE...", run_predict},
      {"inspect", "what a checkpoint holds: model, classes, optimizer, epoch, metrics", run_inspect},
      {"export", "a checkpoint's weights as safetensors: export CHECKPOINT --safetensors OUT",
       run_export},
      {"bench", "training throughput on synthetic data (bench train MODEL --device D ...); all-reduce cost "
                "(mpirun -np N convkit bench allreduce)",
       run_bench},
  };
  return list;
}

namespace {

void usage(std::FILE* to) {
  std::fprintf(to, "usage: convkit [--version] <command> [args]\n\ncommands:\n");
  for (const Command& c : commands()) std::fprintf(to, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(to, "\n'convkit <command> --help' lists a command's options.\n");
}

}  // namespace
}  // namespace convkit::cli

int main(int argc, char** argv) {
  using namespace convkit::cli;
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string first = argv[1];
  if (first == "--version" || first == "version") {
    std::printf("convkit %s\n", CONVKIT_VERSION_STRING);
    return 0;
  }
  if (first == "--help" || first == "-h" || first == "help") {
    usage(stdout);
    return 0;
  }
  const Args rest(argv + 2, argv + argc);
  for (const Command& c : commands()) {
    if (first != c.name) continue;
    try {
      return c.run(rest);
    } catch (const std::exception& e) {
      // Messages from deeper down may already start with the command's name.
      std::string_view what = e.what();
      const std::string own = std::string(c.name) + ": ";
      if (what.substr(0, own.size()) == own) what.remove_prefix(own.size());
      std::fprintf(stderr, "convkit %s: %.*s\n", c.name, static_cast<int>(what.size()), what.data());
      return 2;
    }
  }
  std::fprintf(stderr, "convkit: unknown command '%s' (try 'convkit help')\n", first.c_str());
  return 2;
}
