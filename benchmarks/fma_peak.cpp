// This machine's FP32 multiply-add peak, the ceiling the docs measure the
// convolution kernels against (docs/performance.md). For each ISA path this
// CPU runs (the cpu backend's detection, src/cpu/cpu_isa.h): AVX-512 (16-lane
// FMA), AVX2 + FMA (8-lane FMA) and the x86-64 baseline (SSE: 4-lane multiply
// then add, which has no FMA), on one thread and on every OpenMP thread.
//
// Each thread runs `acc = acc * m + a` on 12 independent vector accumulators:
// an FMA's latency is 4-5 cycles and a core issues two per cycle, so at least
// 8-10 chains must be in flight to reach the peak, and 12 leave room while
// fitting the 16 registers of AVX2 and SSE with m and a. m < 1 and a > 0 keep
// the values at 1.0, far from denormals and infinities.
//
// Two rates per row, the best of --repeats runs:
//   gflops_wall: FLOPs of every thread over the wall time of the run;
//   gflops_cpu:  each thread's FLOPs over its own CPU time, summed over the
//                threads: what the cores do while they run this program, so
//                close to the peak even where other jobs share the machine.
// Prints a table, then the same as one line of JSON (also to --json=FILE).
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "convkit/core/error.h"
#include "convkit/core/host_info.h"
#include "cpu/cpu_isa.h"
#include "suite_support.h"

using namespace convkit;
using convkit::cpu::CpuIsa;

namespace {

constexpr int kChains = 12;
constexpr float kMul = 0.999f, kAdd = 0.001f;  // the fixed point of acc * m + a is 1.0

// Each kernel runs `iterations` rounds over the kChains accumulators and
// returns their sum, which the caller keeps so nothing is optimised away.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) float chains_avx512(std::int64_t iterations) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(1.0f + 0.01f * static_cast<float>(j));
  const __m512 m = _mm512_set1_ps(kMul), a = _mm512_set1_ps(kAdd);
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, a);
  }
  float out[16], sum = 0;
  for (int j = 1; j < kChains; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  _mm512_storeu_ps(out, acc[0]);
  for (float v : out) sum += v;
  return sum;
}

__attribute__((target("avx2,fma"))) float chains_avx2(std::int64_t iterations) {
  __m256 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_ps(1.0f + 0.01f * static_cast<float>(j));
  const __m256 m = _mm256_set1_ps(kMul), a = _mm256_set1_ps(kAdd);
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, a);
  }
  float out[8], sum = 0;
  for (int j = 1; j < kChains; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
  _mm256_storeu_ps(out, acc[0]);
  for (float v : out) sum += v;
  return sum;
}

float chains_baseline(std::int64_t iterations) {
  __m128 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm_set1_ps(1.0f + 0.01f * static_cast<float>(j));
  const __m128 m = _mm_set1_ps(kMul), a = _mm_set1_ps(kAdd);
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], m), a);
  }
  float out[4], sum = 0;
  for (int j = 1; j < kChains; ++j) acc[0] = _mm_add_ps(acc[0], acc[j]);
  _mm_storeu_ps(out, acc[0]);
  for (float v : out) sum += v;
  return sum;
}
#else
// Elsewhere the baseline is whatever the compiler makes of scalar chains.
float chains_baseline(std::int64_t iterations) {
  float acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = 1.0f + 0.01f * static_cast<float>(j);
  for (std::int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = acc[j] * kMul + kAdd;
  float sum = 0;
  for (float v : acc) sum += v;
  return sum;
}
#endif

struct Path {
  CpuIsa isa;
  const char* instruction;
  int lanes;
  float (*run)(std::int64_t);
};

std::vector<Path> paths_up_to(CpuIsa best) {
#if defined(__x86_64__)
  std::vector<Path> paths{{CpuIsa::baseline, "SSE mulps + addps", 4, chains_baseline}};
  if (best >= CpuIsa::avx2) paths.push_back({CpuIsa::avx2, "AVX2 vfmadd231ps ymm", 8, chains_avx2});
  if (best >= CpuIsa::avx512) paths.push_back({CpuIsa::avx512, "AVX-512 vfmadd231ps zmm", 16, chains_avx512});
  return paths;
#else
  (void)best;
  return {{CpuIsa::baseline, "scalar multiply-add", 1, chains_baseline}};
#endif
}

double seconds_of(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Rates {
  double wall = 0, cpu = 0;  // GFLOP/s
};

volatile float g_sink = 0;

// One run of `iterations` on `threads` threads.
Rates run_once(const Path& path, std::int64_t iterations, int threads) {
  const double flops_per_thread = 2.0 * kChains * path.lanes * static_cast<double>(iterations);
  std::vector<double> cpu_seconds(static_cast<std::size_t>(threads));
  std::vector<float> sums(static_cast<std::size_t>(threads));
  const double start = seconds_of(CLOCK_MONOTONIC);
#pragma omp parallel num_threads(threads)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const double cpu_start = seconds_of(CLOCK_THREAD_CPUTIME_ID);
    sums[t] = path.run(iterations);
    cpu_seconds[t] = seconds_of(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
  }
  const double wall = seconds_of(CLOCK_MONOTONIC) - start;
  Rates r;
  r.wall = flops_per_thread * threads / wall / 1e9;
  for (int t = 0; t < threads; ++t) {
    r.cpu += flops_per_thread / std::max(cpu_seconds[static_cast<std::size_t>(t)], 1e-9) / 1e9;
    g_sink = g_sink + sums[static_cast<std::size_t>(t)];
  }
  return r;
}

// The best wall and CPU-time rates of `repeats` runs of about `seconds` each.
Rates measure(const Path& path, int threads, double seconds, int repeats) {
  std::int64_t iterations = 1 << 14;
  double took = 0;
  while (took < 0.02) {  // calibrate on one thread's CPU time
    iterations *= 2;
    const double start = seconds_of(CLOCK_THREAD_CPUTIME_ID);
    g_sink = g_sink + path.run(iterations);
    took = seconds_of(CLOCK_THREAD_CPUTIME_ID) - start;
  }
  iterations = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(iterations) * seconds / took));
  Rates best;
  for (int r = 0; r < repeats; ++r) {
    const Rates got = run_once(path, iterations, threads);
    best.wall = std::max(best.wall, got.wall);
    best.cpu = std::max(best.cpu, got.cpu);
  }
  return best;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string load_average() {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) return "unknown";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return text;
}

const std::map<std::string, std::string> kFlags = {
    {"isa", "the ISA paths to measure: all (default: every one this CPU runs), or a comma-separated list of "
            "baseline, avx2, avx512"},
    {"threads", "the thread counts, comma-separated (default 1 and OpenMP's maximum)"},
    {"seconds", "the length of one run in seconds (default 0.5)"},
    {"repeats", "runs per row, the best kept (default 5)"},
    {"json", "also write the JSON line to this file"},
};

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::printf("%s: this machine's FP32 multiply-add peak per ISA path, one thread and all\n\nflags:\n", argv[0]);
      for (const auto& [name, help] : kFlags) std::printf("  --%-10s %s\n", name.c_str(), help.c_str());
      return 0;
    }
  try {
    const bench::Flags flags(argc, argv, kFlags);
    const CpuIsa best = cpu::best_cpu_isa();
    std::vector<Path> paths = paths_up_to(best);
    const std::vector<std::string> wanted = flags.get_list("isa", {"all"});
    if (wanted != std::vector<std::string>{"all"}) {
      std::vector<Path> chosen;
      for (const std::string& name : wanted) {
        CK_CHECK(name == "baseline" || name == "avx2" || name == "avx512", "--isa: unknown ISA path '", name,
                 "' (choices: all, or baseline, avx2, avx512)");
        const CpuIsa isa = cpu::parse_cpu_isa(name);
        const auto it = std::find_if(paths.begin(), paths.end(), [isa](const Path& p) { return p.isa == isa; });
        CK_CHECK(it != paths.end(), "--isa=", name, ": this CPU's best ISA path is ", cpu::cpu_isa_name(best));
        chosen.push_back(*it);
      }
      paths = chosen;
    }
    const int max_threads = omp_get_max_threads();
    std::vector<int> threads;
    for (const std::string& t : flags.get_list("threads", {"1", std::to_string(max_threads)})) {
      char* end = nullptr;
      const long n = std::strtol(t.c_str(), &end, 10);
      CK_CHECK(end == t.c_str() + t.size() && n >= 1 && n <= 4096, "--threads: '", t, "' is not a thread count");
      if (std::find(threads.begin(), threads.end(), n) == threads.end()) threads.push_back(static_cast<int>(n));
    }
    const double seconds = flags.get_double("seconds", 0.5);
    CK_CHECK(seconds > 0 && std::isfinite(seconds), "--seconds must be positive, got ", seconds);
    const std::int64_t repeats = flags.get_int("repeats", 5);
    CK_CHECK(repeats >= 1, "--repeats must be at least 1, got ", repeats);

    const std::string load_before = load_average();
    std::printf("FP32 multiply-add peak, %d accumulators per thread, best of %lld runs of %.2f s\n", kChains,
                static_cast<long long>(repeats), seconds);
    std::printf("cpu: %s; kernels' ISA path: %s\n", cpu_model().c_str(),
                cpu::describe(cpu::choose_cpu_isa(nullptr, best)).c_str());
    std::printf("%-9s %-24s %7s %12s %12s\n", "isa", "instruction", "threads", "GFLOP/s wall", "GFLOP/s cpu");
    std::ostringstream rows;
    for (const Path& path : paths)
      for (int t : threads) {
        const Rates r = measure(path, t, seconds, static_cast<int>(repeats));
        std::printf("%-9s %-24s %7d %12.1f %12.1f\n", cpu::cpu_isa_name(path.isa), path.instruction, t, r.wall, r.cpu);
        std::fflush(stdout);
        rows << (rows.tellp() > 0 ? "," : "") << "{\"isa\":" << json_string(cpu::cpu_isa_name(path.isa))
             << ",\"instruction\":" << json_string(path.instruction) << ",\"lanes\":" << path.lanes
             << ",\"threads\":" << t << ",\"gflops_wall\":" << r.wall << ",\"gflops_cpu\":" << r.cpu << "}";
      }
    std::ostringstream json;
    json << "{\"program\":\"fma_peak\",\"cpu_model\":" << json_string(cpu_model())
         << ",\"best_isa\":" << json_string(cpu::cpu_isa_name(best))
         << ",\"compiler\":" << json_string(compiler_version()) << ",\"omp_max_threads\":" << max_threads
         << ",\"accumulators\":" << kChains << ",\"seconds\":" << seconds << ",\"repeats\":" << repeats
         << ",\"load_average_before\":" << json_string(load_before)
         << ",\"load_average_after\":" << json_string(load_average()) << ",\"results\":[" << rows.str() << "]}";
    std::printf("%s\n", json.str().c_str());
    if (flags.has("json")) {
      std::ofstream out(flags.get("json", ""));
      CK_CHECK(out.good(), "--json: cannot write '", flags.get("json", ""), "'");
      out << json.str() << "\n";
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fma_peak: %s\n", e.what());
    return 2;
  }
  return 0;
}
