#include "cpu/cpu_backend.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

namespace convkit::cpu {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown cpu";
}

const char* simd_name() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return "AVX-512 (16 floats)";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "AVX2+FMA (8 floats)";
  if (__builtin_cpu_supports("avx")) return "AVX (8 floats)";
  return "SSE2 (4 floats)";
#else
  return "unknown SIMD";
#endif
}

}  // namespace

BackendInfo CpuBackend::info() const {
  return {"cpu", true,
          cpu_model() + ", " + std::to_string(omp_get_max_threads()) + " OpenMP threads, " +
              simd_name()};
}

void* CpuBackend::allocate(std::size_t nbytes) {
  constexpr std::size_t kAlign = 64;
  void* p = std::aligned_alloc(kAlign, (nbytes + kAlign - 1) / kAlign * kAlign);
  CK_CHECK(p != nullptr, "cpu: out of memory allocating ", nbytes, " bytes");
  return p;
}

void CpuBackend::deallocate(void* ptr, std::size_t) { std::free(ptr); }

void CpuBackend::copy_from_host(void* dst, const void* src, std::size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

void CpuBackend::copy_to_host(void* dst, const void* src, std::size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

CpuBackend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace convkit::cpu
