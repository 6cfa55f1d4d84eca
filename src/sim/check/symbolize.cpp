// Code addresses to source lines through addr2line. See symbolize.h.
#include "sim/check/symbolize.h"

#include <dlfcn.h>
#include <unistd.h>
#include <errno.h>  // program_invocation_name

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

namespace convkit::sim::detail {
namespace {

std::string trim_newline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// Runs addr2line once for the addresses of one module (offsets from its base).
void resolve_module(const std::string& module, const std::vector<std::uintptr_t>& offsets,
                    std::vector<CodeLocation*>& out) {
  std::ostringstream command;
  command << "addr2line -C -f -e '" << module << "'";
  for (std::uintptr_t offset : offsets) command << " 0x" << std::hex << offset;
  command << " 2>/dev/null";
  FILE* pipe = popen(command.str().c_str(), "r");
  if (pipe == nullptr) return;
  char buffer[4096];
  for (CodeLocation* location : out) {
    if (std::fgets(buffer, sizeof buffer, pipe) == nullptr) break;
    const std::string function = trim_newline(buffer);
    if (std::fgets(buffer, sizeof buffer, pipe) == nullptr) break;
    const std::string file_line = trim_newline(buffer);
    if (function != "??") location->function = function;
    const std::size_t colon = file_line.rfind(':');
    if (colon != std::string::npos && file_line.compare(0, 2, "??") != 0) {
      location->file = project_relative(file_line.substr(0, colon));
      location->line = std::atoi(file_line.c_str() + colon + 1);
    }
  }
  pclose(pipe);
}

// The running program's file ("/proc/self/exe" would name addr2line's own).
std::string main_program() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string(program_invocation_name);
}

}  // namespace

std::string project_relative(const std::string& path) {
  if (path.empty() || path[0] != '/') {  // relative to the build folder
    std::size_t start = 0;
    while (path.compare(start, 3, "../") == 0 || path.compare(start, 2, "./") == 0)
      start += path[start + 1] == '.' ? 3 : 2;
    return path.substr(start);
  }
  std::size_t first = std::string::npos;
  for (const char* top : {"/kernels/", "/tests/", "/include/", "/src/", "/examples/"})
    first = std::min(first, path.find(top));
  return first == std::string::npos ? path : path.substr(first + 1);
}

std::string CodeLocation::site() const {
  if (!file.empty() && line > 0) return file + ":" + std::to_string(line);
  return function;
}

std::vector<CodeLocation> symbolize(const std::vector<const void*>& addresses, bool return_addresses) {
  std::vector<CodeLocation> result(addresses.size());
  struct Batch {
    std::vector<std::uintptr_t> offsets;
    std::vector<CodeLocation*> locations;
  };
  std::map<std::string, Batch> by_module;
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    auto address = reinterpret_cast<std::uintptr_t>(addresses[i]);
    if (return_addresses) --address;  // inside the call, not after it
    std::ostringstream fallback;
    fallback << "?? at " << reinterpret_cast<const void*>(address);
    result[i].function = fallback.str();
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(address), &info) == 0 || info.dli_fname == nullptr) continue;
    if (info.dli_sname != nullptr) result[i].function = info.dli_sname;
    // dladdr names the main program as it was started; addr2line needs a path.
    const std::string name = info.dli_fname;
    const std::string module = name.empty() || name == program_invocation_name ? main_program() : name;
    Batch& batch = by_module[module];
    batch.offsets.push_back(address - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
    batch.locations.push_back(&result[i]);
  }
  for (auto& [module, batch] : by_module) resolve_module(module, batch.offsets, batch.locations);
  return result;
}

}  // namespace convkit::sim::detail
