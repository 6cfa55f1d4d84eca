// GEMM: the cpu matmul (Eigen) and, on a real GPU, every hand-written GEMM
// version (kernels/gemm.cu) and cuBLAS, on square float32 products; then the
// tensor-core versions (kernels/gemm_tensor_core.cu) at each reduced
// float32_precision (high: tf32 operands, medium: bf16) against cuBLAS with
// the same storage and compute type (cublas_baseline.h). Issue 18's goals read
// off the 4096 rows: at least 90% of cuBLAS SGEMM strict, 80% in tf32 and bf16.
//
// Floors: an n x n x n product does 2n^3 flops and must move at least 3n^2
// floats (A, B read, C written): 2n/3 flop per float, i.e. n/6 flop/B. An
// H200's strict float32 pipes (66.9 TFLOP/s) against its 4.8 TB/s put the
// ridge near 14 flop/B, so from n = 128 the product is compute-bound there
// and the ceiling is the peak FMA rate; its tensor cores' dense peaks (TF32
// 494.7, BF16 989.4 TFLOP/s) put the ridge near 103 and 206 flop/B, which the
// product clears from n = 620 and 1,240. What separates the GPU versions is how many
// bytes each pulls from global memory per flop (its "kernel intensity":
// v1 0.25, v2 4, v3 32 flop/B), which each label quotes next to the floor.
//
// Every GPU row checks 64 sampled entries of its product against float64
// before it is timed, within the rounding bound of its precision
// (max_rel_error counter; a row beyond the bound fails instead of timing).
//
// The sim backend runs the same kernels on a CPU emulator; its times mean
// nothing, so it is never timed here (tests/gpu/gemm checks its results).
// Without a usable CUDA device the GPU cases are skipped, and the reason is
// printed and stored in the benchmark context.
#include <benchmark/benchmark.h>

#include <convkit/convkit.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cublas_baseline.h"

using namespace convkit;

namespace {

benchmark::Counter gflops_counter(double flops) {
  return benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

std::string floor_label(std::int64_t n) {
  char text[96];
  std::snprintf(text, sizeof text, "fp32 n=%lld, problem intensity n/6 = %.1f flop/B", static_cast<long long>(n),
                static_cast<double>(n) / 6);
  return text;
}

void BM_CpuMatmul(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const Tensor a = rand({n, n}), b = rand({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  state.counters["GFLOP/s"] = gflops_counter(2.0 * n * n * n);
  state.SetLabel("cpu (Eigen), " + floor_label(n));
}

// The largest relative error a product of n terms of operands in [0, 1) may
// have at `precision`, against float64: operands rounded to unit u (tf32
// 2^-11, bf16 2^-8, none at highest), each product off by 2u + u^2, the
// float32 sum by (n + 2) 2^-24 (the terms are positive, so relative to the sum).
double error_bound(Float32Precision precision, std::int64_t n) {
  const double u = operand_unit_roundoff(precision);
  return 2 * u + u * u + static_cast<double>(n + 2) * 0x1p-24;
}

// Max relative error of 64 sampled entries of c = a b (row-major n x n).
double sampled_error(const Tensor& a, const Tensor& b, const Tensor& c, std::int64_t n) {
  const std::vector<float> ha = a.to_vector<float>(), hb = b.to_vector<float>(), hc = c.to_vector<float>();
  std::mt19937_64 rng(n);
  double worst = 0;
  for (int s = 0; s < 64; ++s) {
    const std::int64_t i = static_cast<std::int64_t>(rng() % n), j = static_cast<std::int64_t>(rng() % n);
    double exact = 0;
    for (std::int64_t k = 0; k < n; ++k) exact += static_cast<double>(ha[i * n + k]) * hb[k * n + j];
    worst = std::max(worst, std::abs(hc[i * n + j] - exact) / exact);
  }
  return worst;
}

// Times product() into c after checking its result: the GPU product plus
// its launch, not allocation or autograd.
void time_gpu_product(benchmark::State& state, Float32Precision precision, const Tensor& a, const Tensor& b,
                      const Tensor& c, const std::function<void()>& product, const std::string& what) {
  const std::int64_t n = state.range(0);
  product();  // warm-up: first launch of this version, cuBLAS handle
  const double error = sampled_error(a, b, c, n), bound = error_bound(precision, n);
  state.counters["max_rel_error"] = error;
  if (!(error <= bound)) {
    state.SkipWithError(("wrong result: sampled relative error " + std::to_string(error) + " above the bound " +
                         std::to_string(bound))
                            .c_str());
    return;
  }
  for (auto _ : state) product();
  state.counters["GFLOP/s"] = gflops_counter(2.0 * n * n * n);
  state.SetLabel(what + ", " + to_string(precision) + ", " + floor_label(n));
}

// The GPU product through the backend, `family` pinned to `version`, at
// `precision`; with b_transposed, B is a transposed view (C = A B^T of the
// stored matrices: both operands k-contiguous, as a Linear layer's forward).
void run_gpu_gemm(benchmark::State& state, Device device, const char* family, int version,
                  Float32Precision precision, const std::string& what, bool b_transposed = false) {
  const std::int64_t n = state.range(0);
  const TensorOptions o = TensorOptions().device(device);
  const Tensor a = rand({1, n, n}, o), c = empty({1, n, n}, o);
  const Tensor b = b_transposed ? rand({1, n, n}, o).transpose(1, 2) : rand({1, n, n}, o);
  Backend& backend = backend_for(device);
  const ScopedFloat32Precision level(precision);
  backend.matmul(a, b, c);  // registers the family
  set_kernel_version(family, version);
  time_gpu_product(state, precision, a, b, c, [&] {
    backend.matmul(a, b, c);
    backend.synchronize();
  }, what);
  set_kernel_version(family, 0);
}

void run_cublas(benchmark::State& state, Device device, Float32Precision precision, bool b_transposed = false) {
  const std::int64_t n = state.range(0);
  const TensorOptions o = TensorOptions().device(device);
  const Tensor a = rand({n, n}, o), stored = rand({n, n}, o), c = empty({n, n}, o);
  const Tensor b = b_transposed ? stored.transpose(0, 1) : stored;
  backend_for(device).synchronize();
  time_gpu_product(state, precision, a, b, c, [&] {
    bench::cublas_gemm(precision, a.data<float>(), stored.data<float>(), c.data<float>(), n, b_transposed);
  }, b_transposed ? "cuBLAS cublasGemmEx, B transposed" : "cuBLAS cublasGemmEx");
}

struct VersionRow {
  int version;
  const char* name;
  const char* label;
  // Its kernel runs wgmma: registered after every other row (main says why).
  bool wgmma = false;
};

// A level's name in the rows: fp32, tf32, bf16.
std::string level_name(Float32Precision p) {
  return p == Float32Precision::highest ? "fp32" : p == Float32Precision::high ? "tf32" : "bf16";
}

const VersionRow kGpuVersions[] = {
    {1, "v1_naive", "v1 naive, kernel intensity 0.25 flop/B"},
    {2, "v2_shared", "v2 16x16 shared tiles, kernel intensity 4 flop/B"},
    {3, "v3_register_blocked", "v3 128x128 tile, 8x8 per thread, kernel intensity 32 flop/B"},
    {4, "v4_warp_tiled", "v4 128x128 block, 64x32 warp, 8x8 thread tiles, kernel intensity 32 flop/B"},
    {5, "v5_cp_async", "v5 v4's tiles in a 3-stage cp.async pipeline"},
    {6, "v6_per_shape", "v6 block tile chosen by the shape (128x128 at n >= 2048)"},
    {7, "v7_split_k", "v7 v6 plus split-K where tiles leave SMs idle"},
    {8, "v8_wide_thread_tiles", "v8 v7 with its 128x128 tile in 64x64 warp tiles, 8x16 thread tiles"},
    {9, "v9_cublas", "cuBLAS SGEMM"},
};

const VersionRow kTensorCoreVersions[] = {
    {1, "v1_warp_per_tile", "tensor-core v1, one warp per 16x8 tile, fragments from global memory"},
    {2, "v2_block_tiled", "tensor-core v2, 64x64 block, 4 warps of 32x32, staged double buffer"},
    {3, "v3_wide_tiles", "tensor-core v3, 128x128 block, 8 warps of 64x32, 16-word stages, 16-byte staging"},
    {4, "v4_async_pipeline", "tensor-core v4, 128x128 block, 4 warps of 64x64, 3-stage cp.async pipeline"},
    {5, "v5_rounded_stages", "tensor-core v5, v4 with tf32 stages rounded as they land and whole-chunk copies"},
    {7, "v7_wgmma_staged", "tensor-core v7, wgmma m64n128 from register-staged K-major stages, 1 block of 2 warpgroups",
     true},
};

// C = A B^T in tf32, the layout tensor-core v6 (wgmma) takes, beside v4 (the
// default) and v7, and cuBLAS in the same layout.
const VersionRow kTensorCoreBtVersions[] = {
    {4, "v4_async_pipeline", "tensor-core v4, B transposed"},
    {6, "v6_wgmma", "tensor-core v6, wgmma m64n128k8 from 128-byte swizzled stages, B transposed", true},
    {7, "v7_wgmma_staged", "tensor-core v7, wgmma from register-staged stages, B transposed", true},
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
    auto sizes = [](benchmark::internal::Benchmark* b) {
      for (std::int64_t n : {256, 512, 1024, 2048, 4096}) b->Arg(n);
      b->UseRealTime()->Unit(benchmark::kMicrosecond);
    };
    for (const auto& v : kGpuVersions) {
      benchmark::RegisterBenchmark((std::string("BM_GpuGemm/") + v.name).c_str(), [v, cuda](benchmark::State& s) {
        run_gpu_gemm(s, cuda, "gemm", v.version, Float32Precision::highest, v.label);
      })->Apply(sizes);
    }
    // Rows run in the order they are registered. The wgmma rows come last:
    // a kernel that faults leaves the CUDA context unusable and takes every
    // later row of the process with it, and the wgmma kernels (sm_90a) are
    // the newest here, written and tested on sim before a GPU ran them.
    auto register_tensor_core = [&](const VersionRow& v, Float32Precision p, bool b_transposed) {
      const std::string name = "BM_GpuGemmTensorCore/" + level_name(p) + (b_transposed ? "/bt/" : "/") + v.name;
      benchmark::RegisterBenchmark(name.c_str(), [v, cuda, p, b_transposed](benchmark::State& s) {
        run_gpu_gemm(s, cuda, "gemm_tensor_core", v.version, p, v.label, b_transposed);
      })->Apply(sizes);
    };
    const Float32Precision reduced[] = {Float32Precision::high, Float32Precision::medium};
    for (Float32Precision p : reduced)
      for (const auto& v : kTensorCoreVersions)
        if (!v.wgmma) register_tensor_core(v, p, false);
    for (Float32Precision p : {Float32Precision::highest, Float32Precision::high, Float32Precision::medium}) {
      benchmark::RegisterBenchmark(("BM_Cublas/" + level_name(p)).c_str(),
                                   [cuda, p](benchmark::State& s) { run_cublas(s, cuda, p); })
          ->Apply(sizes);
    }
    for (const auto& v : kTensorCoreBtVersions)
      if (!v.wgmma) register_tensor_core(v, Float32Precision::high, true);
    benchmark::RegisterBenchmark("BM_Cublas/tf32/bt", [cuda](benchmark::State& s) {
      run_cublas(s, cuda, Float32Precision::high, true);
    })->Apply(sizes);
    for (Float32Precision p : reduced)
      for (const auto& v : kTensorCoreVersions)
        if (v.wgmma) register_tensor_core(v, p, false);
    for (const auto& v : kTensorCoreBtVersions)
      if (v.wgmma) register_tensor_core(v, Float32Precision::high, true);
  } else {
    std::fprintf(stderr, "bench_gemm: GPU cases %s\n", gpu_status.c_str());
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
