// Code addresses to source lines through addr2line. See symbolize.h.
#include "sim/check/symbolize.h"

#include <dlfcn.h>
#include <errno.h>  // program_invocation_name

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

// Build trees put sources at ../../kernels/x.cu or /abs/path/kernels/x.cu;
// the part from the project's top-level folder on is what a reader can open.
std::string project_relative(const std::string& path) {
  for (const char* top : {"/kernels/", "/tests/", "/include/", "/src/", "/examples/"}) {
    const std::size_t at = path.rfind(top);
    if (at != std::string::npos) return path.substr(at + 1);
  }
  return path;
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

}  // namespace

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
    const std::string module =
        std::string(info.dli_fname) == program_invocation_name ? "/proc/self/exe" : info.dli_fname;
    Batch& batch = by_module[module];
    batch.offsets.push_back(address - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
    batch.locations.push_back(&result[i]);
  }
  for (auto& [module, batch] : by_module) resolve_module(module, batch.offsets, batch.locations);
  return result;
}

}  // namespace convkit::sim::detail
