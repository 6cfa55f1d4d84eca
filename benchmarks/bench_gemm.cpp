// GEMM: the cpu matmul (Eigen) and, on a real GPU, every hand-written GEMM
// version (kernels/gemm.cu) and cuBLAS, on square float32 products.
//
// Floors: an n x n x n product does 2n^3 flops and must move at least 3n^2
// floats (A, B read, C written): n/6 flop per 4 bytes, i.e. n/24 flop/B, so
// at n >= 256 (>= 10 flop/B) it is compute-bound on any machine and the
// ceiling is the peak FMA rate. What separates the GPU versions is how many
// bytes each pulls from global memory per flop (its "kernel intensity":
// v1 0.25, v2 4, v3 32 flop/B), which each label quotes next to the floor.
//
// The sim backend runs the same kernels on a CPU emulator; its times mean
// nothing, so it is never timed here (tests/gpu/gemm checks its results).
// Without a usable CUDA device the GPU cases are skipped, and the reason is
// printed and stored in the benchmark context.
#include <benchmark/benchmark.h>

#include <convkit/convkit.h>

#include <cstdio>
#include <string>

using namespace convkit;

namespace {

benchmark::Counter gflops_counter(double flops) {
  return benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

std::string floor_label(std::int64_t n) {
  char text[96];
  std::snprintf(text, sizeof text, "fp32 n=%lld, problem intensity n/24 = %.1f flop/B", static_cast<long long>(n),
                static_cast<double>(n) / 24);
  return text;
}

void BM_CpuMatmul(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const Tensor a = rand({n, n}), b = rand({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  state.counters["GFLOP/s"] = gflops_counter(2.0 * n * n * n);
  state.SetLabel("cpu (Eigen), " + floor_label(n));
}

// The GPU product through the backend into a preallocated output, so the
// figure is the kernel plus its launch, not allocation or autograd.
void run_gpu_gemm(benchmark::State& state, Device device, int version, const std::string& what) {
  const std::int64_t n = state.range(0);
  const TensorOptions o = TensorOptions().device(device);
  const Tensor a = rand({1, n, n}, o), b = rand({1, n, n}, o), c = empty({1, n, n}, o);
  Backend& backend = backend_for(device);
  backend.matmul(a, b, c);  // registers the gemm family
  set_kernel_version("gemm", version);
  backend.matmul(a, b, c);  // warm-up: first launch of this version, cuBLAS handle
  backend.synchronize();
  for (auto _ : state) {
    backend.matmul(a, b, c);
    backend.synchronize();
  }
  set_kernel_version("gemm", 0);
  state.counters["GFLOP/s"] = gflops_counter(2.0 * n * n * n);
  state.SetLabel(what + ", " + floor_label(n));
}

const struct {
  int version;
  const char* name;
  const char* label;
} kGpuVersions[] = {
    {1, "v1_naive", "v1 naive, kernel intensity 0.25 flop/B"},
    {2, "v2_shared", "v2 16x16 shared tiles, kernel intensity 4 flop/B"},
    {3, "v3_register_blocked", "v3 128x128 tile, 8x8 per thread, kernel intensity 32 flop/B"},
    {4, "v4_warp_tiled", "v4 128x128 block, 64x32 warp, 8x8 thread tiles, kernel intensity 32 flop/B"},
    {5, "v5_cp_async", "v5 v4's tiles in a 3-stage cp.async pipeline"},
    {6, "v6_per_shape", "v6 block tile chosen by the shape (128x128 at n >= 2048)"},
    {7, "v7_split_k", "v7 v6 plus split-K where tiles leave SMs idle"},
    {8, "v8_cublas", "cuBLAS SGEMM"},
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  benchmark::RegisterBenchmark("BM_CpuMatmul", BM_CpuMatmul)
      ->Arg(256)
      ->Arg(512)
      ->Arg(1024)
      ->UseRealTime()  // Eigen runs on OpenMP threads: the main thread's CPU time undercounts
      ->Unit(benchmark::kMicrosecond);

  std::string gpu_status = "no cuda backend in this build";
  bool have_gpu = false;
  for (const BackendInfo& info : list_backends()) {
    if (info.name.rfind("cuda", 0) != 0) continue;
    have_gpu = info.usable;
    gpu_status = (info.usable ? "" : "skipped: ") + info.detail;
  }
  benchmark::AddCustomContext("gpu_gemm", gpu_status);
  if (have_gpu) {
    const Device cuda(DeviceType::cuda, 0);
    for (const auto& v : kGpuVersions) {
      benchmark::RegisterBenchmark((std::string("BM_GpuGemm/") + v.name).c_str(),
                                   [v, cuda](benchmark::State& s) { run_gpu_gemm(s, cuda, v.version, v.label); })
          ->Arg(256)
          ->Arg(512)
          ->Arg(1024)
          ->Arg(2048)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  } else {
    std::fprintf(stderr, "bench_gemm: GPU cases %s\n", gpu_status.c_str());
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
