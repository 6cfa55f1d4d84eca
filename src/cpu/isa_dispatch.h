#pragma once
// Every ISA copy's entry points (cpu/isa_entry_points.h), and a call to the
// copy of a given ISA. What runs is chosen once (cpu/cpu_isa.h); the
// dispatching definitions of tap_gemm.h and implementations.h and the cpu
// backend's registration are in isa_dispatch.cpp.
#include <cstdint>

#include "convkit/backend/backend.h"
#include "cpu/conv/implementations.h"
#include "cpu/cpu_isa.h"
#include "cpu/cpu_pool.h"

namespace convkit::cpu {
namespace isa_baseline {
#include "cpu/isa_entry_points.h"
}  // namespace isa_baseline
#if defined(__x86_64__)
namespace isa_avx2 {
#include "cpu/isa_entry_points.h"
}  // namespace isa_avx2
namespace isa_avx512 {
#include "cpu/isa_entry_points.h"
}  // namespace isa_avx512
#endif
}  // namespace convkit::cpu

// CONVKIT_CPU_ISA_CALL(isa, entry(args...)) returns entry(args...) of the
// copy for `isa` (a CpuIsa). Builds for other processors have the baseline
// copy alone.
#if defined(__x86_64__)
#define CONVKIT_CPU_ISA_CALL(isa, ...)                                    \
  do {                                                                    \
    switch (isa) {                                                        \
      case ::convkit::cpu::CpuIsa::avx512: return ::convkit::cpu::isa_avx512::__VA_ARGS__; \
      case ::convkit::cpu::CpuIsa::avx2: return ::convkit::cpu::isa_avx2::__VA_ARGS__;     \
      case ::convkit::cpu::CpuIsa::baseline: break;                       \
    }                                                                     \
    return ::convkit::cpu::isa_baseline::__VA_ARGS__;                     \
  } while (false)
#else
#define CONVKIT_CPU_ISA_CALL(isa, ...)           \
  do {                                           \
    (void)(isa);                                 \
    return ::convkit::cpu::isa_baseline::__VA_ARGS__; \
  } while (false)
#endif
