#pragma once
// What a measurement ran on, for benchmark records: the CPU, the vector ISA
// the library was compiled for, and the compiler.
#include <string>

namespace convkit {

// The "model name" of /proc/cpuinfo ("AMD EPYC 7B13"), or "unknown".
std::string cpu_model();
// The x86 or Arm vector extensions this build of the library may use, from
// the compiler's predefined macros: "avx2 fma" for -march=haswell, "sse2"
// for a portable x86-64 build.
std::string compiled_isa();
// The compiler's name and version ("gcc 12.2.0", "clang 14.0.6").
std::string compiler_version();

}  // namespace convkit
