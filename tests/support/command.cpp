// Running a shell command and collecting its output, for end-to-end tests.
#include "support/command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace convkit::testing {

namespace fs = std::filesystem;

std::string CommandResult::last_line() const {
  std::size_t end = out.size();
  while (end > 0 && out[end - 1] == '\n') --end;
  const std::size_t start = out.rfind('\n', end == 0 ? 0 : end - 1);
  return out.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1));
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

CommandResult run_command(const std::string& command) {
  // stderr goes to a file so the two streams stay apart.
  const std::string err_path =
      (fs::temp_directory_path() / ("convkit_test_stderr_" + std::to_string(::getpid()))).string();
  CommandResult r;
  std::FILE* pipe = ::popen((command + " 2>" + shell_quote(err_path)).c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed for: " + command);
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  r.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  fs::remove(err_path);
  return r;
}

}  // namespace convkit::testing
