// mma.sync driven by per-lane register tables: each lane of each warp loads
// its a, b, c registers from global memory, runs one mma and stores d, so the
// tests can put any value in any fragment register.
#include "convkit/sim/cuda_compat.h"
#include "kernels/tensor_core.cuh"
#include "kernels/test_kernels.h"

namespace sim_test_kernels {
namespace {

namespace dev = convkit::CK_GPU_NS::dev;

__global__ void mma_kernel(MmaKind kind, const MmaRegisters* in, float* d, int exiting_lane) {
  const unsigned t = threadIdx.x;
  if (static_cast<int>(t) == exiting_lane) return;
  MmaRegisters r = in[t];
  float out[4];
  if (kind == MmaKind::tf32_m16n8k8) {
    dev::mma_m16n8k8_tf32(out, r.a, r.b, r.c);
  } else {
    dev::mma_m16n8k16_bf16(out, r.a, r.b, r.c);
  }
  for (int i = 0; i < 4; ++i) d[t * 4 + i] = out[i];
}

}  // namespace

void mma(MmaKind kind, unsigned warps, const MmaRegisters* in, float* d, int exiting_lane) {
  convkit::launch(mma_kernel, dim3(1), dim3(32 * warps), 0, nullptr, kind, in, d, exiting_lane);
}

}  // namespace sim_test_kernels
