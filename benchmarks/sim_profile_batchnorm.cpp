// The sim performance model on the end of a ResNet block, relu(bn(x) + r):
// the fused op (batch_norm_add_relu) against the three ops it replaces
// (batch_norm, add, relu), forward and backward, in training mode on float32.
// Prints each section's profile table (convkit/sim/profile.h) and its global
// traffic in bytes. Counts are exact; the times are roofline ESTIMATES.
// Usage: sim_profile_batchnorm [NxCxHxW=2x128x16x16] [gpu=H100]
#include <cstdio>
#include <string>
#include <vector>

#include <convkit/convkit.h>

#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"

using namespace convkit;

namespace {

struct Totals {
  double load_bytes = 0, store_bytes = 0, seconds = 0;
};

// Global traffic as the model counts it: 32-byte sectors, with no cache.
Totals totals(const std::vector<sim::KernelProfile>& profiles, const sim::GpuSpec& gpu) {
  Totals t;
  for (const sim::KernelProfile& p : profiles) {
    t.load_bytes += 32.0 * static_cast<double>(p.global_load.sectors);
    t.store_bytes += 32.0 * static_cast<double>(p.global_store.sectors + p.global_atomic.sectors);
    t.seconds += sim::estimate(p, gpu).seconds();
  }
  return t;
}

Totals print_section(const char* what, sim::ScopedProfile& profile, const sim::GpuSpec& gpu) {
  const std::vector<sim::KernelProfile> p = profile.take();
  const Totals t = totals(p, gpu);
  std::printf("== %s\n%s", what, sim::format_profile(p, gpu).c_str());
  std::printf("-- %s: %zu kernels, global loads %.0f B, stores %.0f B, total %.0f B; estimate %.3f us on %s\n\n", what,
              p.size(), t.load_bytes, t.store_bytes, t.load_bytes + t.store_bytes, t.seconds * 1e6, std::string(gpu.name).c_str());
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  long long N = 2, C = 128, H = 16, W = 16;
  if (argc > 1 && (std::sscanf(argv[1], "%lldx%lldx%lldx%lld", &N, &C, &H, &W) != 4 || N <= 0 || C <= 0 || H <= 0 ||
                   W <= 0 || N * H * W < 2)) {
    std::fprintf(stderr, "sim_profile_batchnorm: expected NxCxHxW with positive sizes and N*H*W > 1, got %s\n",
                 argv[1]);
    return 2;
  }
  const sim::GpuSpec gpu = sim::gpu_spec(argc > 2 ? argv[2] : "H100");
  if (!sim::checks_available()) {
    std::fprintf(stderr, "sim_profile_batchnorm: this build has no sim instrumentation (CONVKIT_SIM_CHECKS=OFF)\n");
    return 77;
  }
  std::printf("# relu(batch_norm(x) + r), training, float32, x and r [%lld, %lld, %lld, %lld]: %lld elements, "
              "%lld bytes per tensor\n",
              N, C, H, W, N * C * H * W, 4 * N * C * H * W);
  const TensorOptions o = TensorOptions().dtype(DType::float32).device(Device::parse("sim"));
  Totals sum[2][2];
  for (int fused = 0; fused < 2; ++fused) {
    // The profile sees global accesses only to memory allocated while it is on.
    sim::ScopedProfile profile;
    // Centred, so that the ReLU cuts about half the outputs.
    Tensor x = rand({N, C, H, W}, o) - 0.5, r = rand({N, C, H, W}, o) - 0.5;
    x.requires_grad_(true);
    r.requires_grad_(true);
    const Tensor w = ones({C}, o).requires_grad_(true), b = zeros({C}, o).requires_grad_(true);
    const Tensor rm = zeros({C}, o), rv = ones({C}, o), g = rand({N, C, H, W}, o);
    profile.take();  // the fills above
    const char* name = fused ? "fused batch_norm_add_relu" : "unfused batch_norm -> add -> relu";
    const Tensor y =
        fused ? batch_norm_add_relu(x, r, rm, rv, w, b, true) : relu(batch_norm(x, rm, rv, w, b, true) + r);
    sum[fused][0] = print_section((std::string(name) + ", forward").c_str(), profile, gpu);
    y.backward(g);
    sum[fused][1] = print_section((std::string(name) + ", backward").c_str(), profile, gpu);
  }
  for (int pass = 0; pass < 2; ++pass) {
    const double u = sum[0][pass].load_bytes + sum[0][pass].store_bytes,
                 f = sum[1][pass].load_bytes + sum[1][pass].store_bytes;
    std::printf("%s: unfused %.0f B, fused %.0f B (%.2fx fewer); estimate unfused %.3f us, fused %.3f us on %s\n",
                pass == 0 ? "forward" : "backward", u, f, u / f, sum[0][pass].seconds * 1e6,
                sum[1][pass].seconds * 1e6, std::string(gpu.name).c_str());
  }
  return 0;
}
