// The sim performance model on the GEMM kernels: every strict-precision
// version of "gemm" (float32) and every version of "gemm_tensor_core" in tf32
// and bf16, on one n x n x n product, each printed as the profile's table
// (convkit/sim/profile.h) for the named GPU. Counts are exact; the times are
// roofline ESTIMATES. Usage: sim_profile_gemm [n=256] [gpu=H100]
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
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 256;
  const std::string gpu = argc > 2 ? argv[2] : "H100";
  if (n <= 0) {
    std::fprintf(stderr, "sim_profile_gemm: n must be positive, got %s\n", argv[1]);
    return 2;
  }
  if (!sim::checks_available()) {
    std::fprintf(stderr, "sim_profile_gemm: this build has no sim instrumentation (CONVKIT_SIM_CHECKS=OFF)\n");
    return 2;
  }
  // The profile sees global accesses only to memory allocated while it is on.
  sim::ScopedProfile profile;
  const TensorOptions o = TensorOptions().dtype(DType::float32).device(Device::parse("sim"));
  const Tensor a = rand({n, n}, o), b = rand({n, n}, o);
  Tensor c = zeros({n, n}, o);
  kernels::GemmArgs g;
  g.M = g.N = g.K = n;
  g.a = a.raw_data(), g.b = b.raw_data(), g.c = c.raw_data();
  g.lda = g.ldb = g.ldc = n;
  profile.take();  // the fills above
  auto run = [&](const char* what, auto&& launch) {
    launch();
    std::printf("== %s, n=%lld\n%s", what, static_cast<long long>(n),
                sim::format_profile(profile.take(), sim::gpu_spec(gpu)).c_str());
  };
  for (int v = 1; v <= 3; ++v) {
    const std::string what = "gemm v" + std::to_string(v) + " fp32";
    run(what.c_str(), [&] { kernels::launch_gemm(DType::float32, g, v); });
  }
  for (auto p : {kernels::TensorCorePrecision::tf32, kernels::TensorCorePrecision::bf16})
    for (int v = 1; v <= 2; ++v) {
      const std::string what = std::string("gemm_tensor_core v") + std::to_string(v) + " " + kernels::precision_name(p);
      run(what.c_str(), [&] { kernels::launch_gemm_tensor_core(p, DType::float32, g, v); });
    }
  return 0;
}
