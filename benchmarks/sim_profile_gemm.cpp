// The sim performance model on the GEMM kernels: every strict-precision
// version of "gemm" (float32) but cuBLAS and every version of "gemm_tensor_core" in tf32
// and bf16, on one n x n x n product, each printed as the profile's table
// (convkit/sim/profile.h) for the named GPU. Counts are exact; the times are
// roofline ESTIMATES. Usage: sim_profile_gemm [n=256 | MxNxK] [gpu=H100] [tn]
// MxNxK profiles a non-square product; "tn" stores B transposed (N x K), as
// a Linear layer's weight is ("nn" does not). A last argument FIRST-LAST
// profiles only those gemm versions, and no tensor-core GEMM.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <convkit/convkit.h>

#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "kernels/gemm_tensor_core.cuh"

using namespace convkit;
namespace kernels = convkit::CK_GPU_NS;

int main(int argc, char** argv) {
  long long M = 256, N = 256, K = 256;
  if (argc > 1) {
    const int fields = std::sscanf(argv[1], "%lldx%lldx%lld", &M, &N, &K);
    if (fields == 1) N = K = M;
    if ((fields != 1 && fields != 3) || M <= 0 || N <= 0 || K <= 0) {
      std::fprintf(stderr, "sim_profile_gemm: expected n or MxNxK with positive sizes, got %s\n", argv[1]);
      return 2;
    }
  }
  const std::string gpu = argc > 2 ? argv[2] : "H100";
  const bool trans_b = argc > 3 && std::string(argv[3]) == "tn";
  int first = 1, last = kernels::kGemmCublasVersion - 1;
  const bool some = argc > 4;
  if (some && (std::sscanf(argv[4], "%d-%d", &first, &last) != 2 || first < 1 || last < first ||
               last >= kernels::kGemmCublasVersion)) {
    std::fprintf(stderr, "sim_profile_gemm: expected versions FIRST-LAST within 1-%d, got %s\n",
                 kernels::kGemmCublasVersion - 1, argv[4]);
    return 2;
  }
  if (!sim::checks_available()) {
    std::fprintf(stderr, "sim_profile_gemm: this build has no sim instrumentation (CONVKIT_SIM_CHECKS=OFF)\n");
    return 2;
  }
  // The profile sees global accesses only to memory allocated while it is on.
  sim::ScopedProfile profile;
  const TensorOptions o = TensorOptions().dtype(DType::float32).device(Device::parse("sim"));
  const Tensor a = rand({M, K}, o), b = trans_b ? rand({N, K}, o) : rand({K, N}, o);
  Tensor c = zeros({M, N}, o);
  kernels::GemmArgs g;
  g.M = M, g.N = N, g.K = K, g.trans_b = trans_b;
  g.a = a.raw_data(), g.b = b.raw_data(), g.c = c.raw_data();
  g.lda = K, g.ldb = trans_b ? K : N, g.ldc = N;
  profile.take();  // the fills above
  auto run = [&](const char* what, auto&& launch) {
    launch();
    std::printf("== %s, M=%lld N=%lld K=%lld%s\n%s", what, M, N, K, trans_b ? " (B transposed)" : "",
                sim::format_profile(profile.take(), sim::gpu_spec(gpu)).c_str());
  };
  for (int v = first; v <= last; ++v) {
    const std::string what = "gemm v" + std::to_string(v) + " fp32 (" + kernels::gemm_describe(DType::float32, g, v) + ")";
    run(what.c_str(), [&] { kernels::launch_gemm(DType::float32, g, v); });
  }
  if (some) return 0;
  kernels::register_gemm_tensor_core_family();
  int tc_versions = 0;
  for (const KernelFamilyInfo& f : kernel_families())
    if (f.family == "gemm_tensor_core") tc_versions = f.versions;
  for (auto p : {kernels::TensorCorePrecision::tf32, kernels::TensorCorePrecision::bf16})
    for (int v = 1; v <= tc_versions; ++v) {
      const std::string what = std::string("gemm_tensor_core v") + std::to_string(v) + " " + kernels::precision_name(p);
      const std::string why = kernels::gemm_tensor_core_cannot_implement(p, DType::float32, g, v);
      if (!why.empty()) {
        std::printf("== %s: not run: %s\n", what.c_str(), why.c_str());
        continue;
      }
      run(what.c_str(), [&] { kernels::launch_gemm_tensor_core(p, DType::float32, g, v); });
    }
  return 0;
}
