#include "cpu/cpu_isa.h"

#include <cstdlib>

#include "convkit/core/error.h"

namespace convkit::cpu {

namespace {

constexpr CpuIsa kIsas[] = {CpuIsa::baseline, CpuIsa::avx2, CpuIsa::avx512};

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::baseline: return "baseline";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::avx512: return "avx512";
  }
  return "?";
}

CpuIsa parse_cpu_isa(std::string_view text) {
  for (CpuIsa isa : kIsas)
    if (text == cpu_isa_name(isa)) return isa;
  CK_FAIL("CONVKIT_CPU_ISA: unknown ISA '", text, "' (choices: baseline, avx2, avx512)");
}

CpuIsa best_cpu_isa() {
#if defined(__x86_64__)
  // The features each level's -march enables that compilers emit on their
  // own. x86-64-v3's F16C, LZCNT and MOVBE come with AVX2 + BMI2 on every
  // CPU made (Haswell, Zen), and clang 14 cannot ask for F16C.
  __builtin_cpu_init();
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  return v4 ? CpuIsa::avx512 : v3 ? CpuIsa::avx2 : CpuIsa::baseline;
#else
  return CpuIsa::baseline;  // the one copy non-x86 builds have (cmake/ConvkitIsa.cmake)
#endif
}

CpuIsaChoice choose_cpu_isa(const char* forced, CpuIsa best) {
  if (forced == nullptr || *forced == '\0') return {best, false, best};
  const CpuIsa isa = parse_cpu_isa(forced);
  CK_CHECK(static_cast<int>(isa) <= static_cast<int>(best), "CONVKIT_CPU_ISA=", forced,
           ": this CPU (or this build) cannot run the ", forced, " kernels; its best ISA is ", cpu_isa_name(best),
           " (choices it runs: ", best == CpuIsa::baseline ? "baseline" : best == CpuIsa::avx2 ? "baseline, avx2"
                                                                                                 : "baseline, avx2, avx512",
           ")");
  return {isa, true, best};
}

const CpuIsaChoice& selected_cpu_isa() {
  // A throwing initializer leaves the static uninitialized, so every call
  // with an invalid CONVKIT_CPU_ISA reports it again.
  static const CpuIsaChoice choice = choose_cpu_isa(std::getenv("CONVKIT_CPU_ISA"), best_cpu_isa());
  return choice;
}

std::string describe(const CpuIsaChoice& choice) {
  std::string out = cpu_isa_name(choice.isa);
  if (!choice.forced) return out + " (detected)";
  return out + " (forced by CONVKIT_CPU_ISA; this CPU's best is " + cpu_isa_name(choice.best) + ")";
}

}  // namespace convkit::cpu
