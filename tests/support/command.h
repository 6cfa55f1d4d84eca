#pragma once
// Running a program from a test: the convkit tool, a benchmark binary.
#include <string>

namespace convkit::testing {

// Runs a shell command, returning its exit status and what it wrote to
// stdout and stderr (separately).
struct CommandResult {
  int status = -1;
  std::string out, err;
  // The last non-empty line of out.
  std::string last_line() const;
};
CommandResult run_command(const std::string& command);

// Single-quoted for /bin/sh.
std::string shell_quote(const std::string& s);

}  // namespace convkit::testing
