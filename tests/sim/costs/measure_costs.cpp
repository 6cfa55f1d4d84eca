// Measures what the sim runtime costs on this machine: context switches per
// second, a lane shuffle, an empty CUDA thread, fiber memory, and three real
// kernels against plain C++ loops. docs/sim.md quotes its output.
//
//   build/release/tests/sim/sim_measure_costs [threads]
//
// Per-operation figures use one OS thread; `threads` (default: OpenMP's
// default) is used for the last, whole-machine SGEMM line. Each figure is the
// best of 5 runs, because shared machines are noisy.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <vector>

#include "costs/cost_kernels.h"
#include "sim/context.h"

namespace {

template <typename F>
double best_seconds(F&& run, int repeats = 5) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count());
  }
  return best;
}

// Resident memory of this process, in bytes.
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  double pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * 4096.0;
}

std::vector<float> random_floats(std::size_t n) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = uniform(rng);
  return v;
}

void sgemm_loop(const float* a, const float* b, float* c, int n) {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
  }
}

void im2col_loop(const float* x, int batch, int channels, int height, int width, float* columns) {
  const long long pixels = 1ll * height * width;
  for (long long plane = 0; plane < 1ll * batch * channels; ++plane) {
    for (int k = 0; k < 9; ++k) {
      const int ky = k / 3, kx = k % 3;
      float* out = columns + (plane * 9 + k) * pixels;
      for (int oy = 0; oy < height; ++oy) {
        for (int ox = 0; ox < width; ++ox) {
          const int iy = oy + ky - 1, ix = ox + kx - 1;
          const bool inside = iy >= 0 && iy < height && ix >= 0 && ix < width;
          out[oy * width + ox] = inside ? x[plane * pixels + iy * width + ix] : 0.0f;
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int machine_threads = argc > 1 ? std::atoi(argv[1]) : omp_get_max_threads();
  omp_set_num_threads(1);
  std::printf("context switch: %s\n", convkit::sim::detail::context_switch_kind());

  // Fiber memory: the first launch that parks 1024 threads creates 1024 fibers.
  const double rss_before = resident_bytes();
  sim_cost_kernels::barriers(1024, 2);
  const double rss_after = resident_bytes();
  std::printf("1024 fibers: %.1f MB resident (%.1f KB per fiber)\n", (rss_after - rss_before) / 1e6,
              (rss_after - rss_before) / 1024 / 1e3);

  {
    constexpr unsigned kThreads = 256;
    constexpr int kRounds = 4000;
    const double s = best_seconds([] { sim_cost_kernels::barriers(kThreads, kRounds); });
    const double switches = double{kThreads} * kRounds;  // each arrival parks one fiber
    std::printf("__syncthreads, 256 threads: %.1f M switches/s (%.1f ns per thread and barrier)\n",
                switches / s / 1e6, s / switches * 1e9);
  }
  {
    constexpr unsigned kThreads = 1024;
    constexpr int kRounds = 200;
    float sink = 0;
    const double s = best_seconds([&] { sim_cost_kernels::shuffles(kThreads, kRounds, &sink); });
    std::printf("__shfl_xor_sync: %.1f ns per lane and shuffle\n",
                s / (double{kThreads} * kRounds) * 1e9);
  }
  {
    constexpr unsigned kBlocks = 4096, kThreads = 256;
    const double s = best_seconds([] { sim_cost_kernels::empty_threads(kBlocks, kThreads); });
    std::printf("empty kernel: %.1f ns per CUDA thread (%u blocks x %u threads)\n",
                s / (double{kBlocks} * kThreads) * 1e9, kBlocks, kThreads);
  }
  {
    constexpr int n = 256;
    const std::vector<float> a = random_floats(n * n), b = random_floats(n * n);
    std::vector<float> c(n * n), reference(n * n);
    const double sim =
        best_seconds([&] { sim_cost_kernels::sgemm_tiled(a.data(), b.data(), c.data(), n); });
    const double loop = best_seconds([&] { sgemm_loop(a.data(), b.data(), reference.data(), n); });
    double worst = 0;
    for (int i = 0; i < n * n; ++i) worst = std::max(worst, double{std::abs(c[i] - reference[i])});
    std::printf(
        "SGEMM 256^3, 16x16 tiles (%d barrier arrivals): sim %.1f ms, C++ loop %.1f ms "
        "(max |difference| %.1e)\n",
        2 * n * n * (n / 16), sim * 1e3, loop * 1e3, worst);
    omp_set_num_threads(machine_threads);
    const double parallel =
        best_seconds([&] { sim_cost_kernels::sgemm_tiled(a.data(), b.data(), c.data(), n); });
    omp_set_num_threads(1);
    std::printf("SGEMM 256^3 on %d OS threads: sim %.1f ms\n", machine_threads, parallel * 1e3);
  }
  {
    const std::size_t n = 1 << 20;
    const std::vector<float> x = random_floats(n);
    std::vector<float> partials(256);
    float sum = 0, loop_sum = 0;
    const double sim =
        best_seconds([&] { sim_cost_kernels::reduce_sum(x.data(), n, partials.data(), &sum); });
    const double loop = best_seconds([&] {
      float s = 0;
      for (float v : x) s += v;
      loop_sum = s;
    });
    std::printf(
        "sum of 1M floats, shuffle reduction (2 launches): sim %.1f ms, C++ loop %.2f ms "
        "(sums %.3f and %.3f)\n",
        sim * 1e3, loop * 1e3, sum, loop_sum);
  }
  {
    constexpr int kBatch = 128, kChannels = 32, kSize = 32;
    const std::vector<float> x = random_floats(std::size_t{kBatch} * kChannels * kSize * kSize);
    std::vector<float> columns(x.size() * 9), reference(x.size() * 9);
    const double sim = best_seconds([&] {
      sim_cost_kernels::im2col_3x3(x.data(), kBatch, kChannels, kSize, kSize, columns.data());
    });
    const double loop = best_seconds(
        [&] { im2col_loop(x.data(), kBatch, kChannels, kSize, kSize, reference.data()); });
    std::printf(
        "im2col 128x32x32x32, 3x3, pad 1 (%zu threads): sim %.1f ms, C++ loop %.1f ms "
        "(identical: %s)\n",
        x.size(), sim * 1e3, loop * 1e3, columns == reference ? "yes" : "NO");
  }
  return 0;
}
