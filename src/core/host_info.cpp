#include "convkit/core/host_info.h"

#include <fstream>

namespace convkit {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "unknown" : line.substr(start);
  }
  return "unknown";
}

std::string compiled_isa() {
  std::string isa;
  const auto add = [&isa](const char* name) {
    if (!isa.empty()) isa += ' ';
    isa += name;
  };
#if defined(__AVX512F__)
  add("avx512f");
#endif
#if defined(__AVX512BW__)
  add("avx512bw");
#endif
#if defined(__AVX512VL__)
  add("avx512vl");
#endif
#if defined(__AVX2__)
  add("avx2");
#elif defined(__AVX__)
  add("avx");
#endif
#if defined(__FMA__)
  add("fma");
#endif
#if defined(__F16C__)
  add("f16c");
#endif
#if !defined(__AVX__) && defined(__SSE4_2__)
  add("sse4.2");
#elif !defined(__AVX__) && defined(__SSE2__)
  add("sse2");
#endif
#if defined(__ARM_FEATURE_SVE)
  add("sve");
#endif
#if defined(__ARM_NEON)
  add("neon");
#endif
  return isa.empty() ? "scalar" : isa;
}

std::string compiler_version() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace convkit
