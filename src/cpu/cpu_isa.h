#pragma once
// Which instruction set the cpu backend's kernels run with. The backend is
// compiled once per ISA level (cmake/ConvkitIsa.cmake), each copy in its own
// namespace isa_<name> (cpu/isa_entry_points.h); at first use the best level
// this CPU supports is chosen (cpuid, once), unless CONVKIT_CPU_ISA forces
// one. docs/cpu-isa.md describes the levels and how to force one.
#include <string>
#include <string_view>

namespace convkit::cpu {

enum class CpuIsa {
  baseline,  // x86-64 (SSE2): every x86-64 CPU, and the only level elsewhere
  avx2,      // x86-64-v3: AVX2 + FMA (+ BMI1/2, F16C, LZCNT, MOVBE)
  avx512,    // x86-64-v4: AVX-512 F/BW/CD/DQ/VL
};

const char* cpu_isa_name(CpuIsa isa);
// "baseline", "avx2" or "avx512"; anything else throws Error naming the choices.
CpuIsa parse_cpu_isa(std::string_view text);
// The best level this build has code for and this CPU runs (cpuid).
CpuIsa best_cpu_isa();

struct CpuIsaChoice {
  CpuIsa isa;
  bool forced;  // by CONVKIT_CPU_ISA, rather than detected
  CpuIsa best;  // what detection gives
};
// The choice for a CONVKIT_CPU_ISA value (nullptr or empty: unset) on a CPU
// whose best level is `best`. Forcing a level above `best` throws Error
// naming both: it would stop on the first instruction the CPU lacks.
CpuIsaChoice choose_cpu_isa(const char* forced, CpuIsa best);
// The process's choice, made once from the environment; throws (at every
// call) when CONVKIT_CPU_ISA is invalid for this CPU.
const CpuIsaChoice& selected_cpu_isa();
// "avx2 (detected)" or "baseline (forced by CONVKIT_CPU_ISA; this CPU's best is avx2)".
std::string describe(const CpuIsaChoice& choice);

}  // namespace convkit::cpu
