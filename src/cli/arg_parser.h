#pragma once
// A small parser for the commands' arguments: positionals and --options,
// each option declared with whether it takes a value. Anything undeclared,
// a missing value, or a malformed number is a convkit::Error naming the
// argument; main prints it as one line after "convkit COMMAND: ".
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace convkit::cli {

struct OptionSpec {
  const char* name;  // without the leading "--"
  bool takes_value;
};

// True when args hold --help or -h: the command prints its usage and exits 0.
bool help_requested(const Args& args);

class ParsedArgs {
 public:
  // Accepts "--name value" and "--name=value" for options with a value.
  ParsedArgs(const Args& args, std::string command, const std::vector<OptionSpec>& options);

  const std::vector<std::string>& positional() const { return positional_; }
  // Throws unless there are between min and max positionals, naming `what`.
  void expect_positional(std::size_t min, std::size_t max, const char* what) const;

  bool flag(const std::string& name) const { return values_.count(name) > 0; }
  std::optional<std::string> value(const std::string& name) const;
  std::string value_or(const std::string& name, const std::string& fallback) const;
  // Integer / real values with a lower bound; errors name the option.
  std::int64_t int_or(const std::string& name, std::int64_t fallback, std::int64_t min) const;
  double real_or(const std::string& name, double fallback, double min_exclusive) const;

  const std::string& command() const { return command_; }

 private:
  std::string command_;
  std::vector<std::string> positional_;
  std::map<std::string, std::string> values_;  // flags map to ""
};

}  // namespace convkit::cli
