#pragma once
// Source lines for code addresses, for the reports of the sim checks.
//
// Kernels are compiled with line tables (-g1, cmake/ConvkitSimCheck.cmake), and
// binutils' addr2line reads them: spawning it costs milliseconds, which only
// reports pay, and it saves carrying a DWARF reader. Call it on an OS thread's
// own stack, never on a fiber's small one.
#include <string>
#include <vector>

namespace convkit::sim::detail {

struct CodeLocation {
  std::string function;  // demangled; "?" when unknown
  std::string file;      // "" when unknown
  int line = 0;
  // "kernels/gemm.cu:120", or the function and address when there is no line.
  std::string site() const;
};

// Build trees name sources ../../kernels/x.cu or /abs/path/kernels/x.cu; the
// part from the project's top-level folder on is what a reader can open.
std::string project_relative(const std::string& path);

// `return_address`: the address after a call, as __builtin_return_address
// gives; the call itself is looked up. Otherwise the address is a function's.
std::vector<CodeLocation> symbolize(const std::vector<const void*>& addresses, bool return_addresses);

}  // namespace convkit::sim::detail
