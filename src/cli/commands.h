#pragma once
// One function per `convkit` command. Each returns the process exit code and
// reports bad arguments as convkit::Error (printed by main as one line).
#include <string>
#include <vector>

namespace convkit::cli {

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args& args);
};

// Every command the tool knows, in the order `convkit help` lists them.
const std::vector<Command>& commands();

int run_devices(const Args& args);
int run_summary(const Args& args);
int run_train(const Args& args);
int run_eval(const Args& args);
int run_predict(const Args& args);
int run_bench(const Args& args);
int run_inspect(const Args& args);
int run_export(const Args& args);

}  // namespace convkit::cli
