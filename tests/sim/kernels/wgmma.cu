// wgmma.mma_async on sim, driven from a shared-memory image built by the
// test: one warpgroup, one instruction (or two), any N, either type.
#include "convkit/sim/cuda_compat.h"
#include "convkit/sim/wgmma.h"
#include "kernels/test_kernels.h"
#include "kernels/warpgroup_mma.cuh"

namespace sim_test_kernels {
namespace {

namespace dev = convkit::CK_GPU_NS::dev;
namespace sim = convkit::sim;

constexpr int kMaxAccumulators = 128;  // m64n256 over 128 threads

void issue(const WgmmaCall& call, float* acc) {
  const sim::WgmmaLane lane{acc, call.desc_a, call.desc_b, call.n,
                            call.bf16 ? sim::WgmmaType::bf16 : sim::WgmmaType::tf32, call.scale_d};
  sim::detail::wgmma_issue(lane, __FILE__, __LINE__);
}

__global__ void wgmma_kernel(WgmmaCall call, const float* c, float* d, float* d2) {
  CK_DYNAMIC_SHARED(unsigned char, smem);
  const unsigned t = threadIdx.x;
  // A word (racecheck's unit) per thread at a time.
  for (unsigned i = 4 * t; i < call.image_bytes; i += 4 * blockDim.x)
    for (unsigned b = i; b < i + 4 && b < call.image_bytes; ++b) smem[call.offset + b] = call.image[b];
  if (call.mode != WgmmaMode::no_proxy_fence) dev::fence_proxy_async();
  if (call.mode != WgmmaMode::no_barrier) __syncthreads();
  const int count = call.n / 2;
  float acc[kMaxAccumulators];
  for (int i = 0; i < count; ++i) acc[i] = c[t * count + i];
  if (call.mode != WgmmaMode::no_wgmma_fence) dev::wgmma_fence();
  issue(call, acc);
  dev::wgmma_commit();
  if (call.mode == WgmmaMode::no_wait) return;
  if (call.mode == WgmmaMode::wait_then_issue) {
    dev::wgmma_wait<0>();
    issue(call, acc);
    dev::wgmma_commit();
  }
  if (call.mode == WgmmaMode::zero_after_issue) {
    for (unsigned i = t; i < call.image_bytes; i += blockDim.x) smem[call.offset + i] = 0;
    __syncthreads();
  }
  if (call.mode == WgmmaMode::two_groups) {
    issue(call, acc);
    dev::wgmma_commit();
    dev::wgmma_wait<1>();
    for (int i = 0; i < count; ++i) d[t * count + i] = acc[i];
    dev::wgmma_wait<0>();
    for (int i = 0; i < count; ++i) d2[t * count + i] = acc[i];
    return;
  }
  dev::wgmma_wait<0>();
  for (int i = 0; i < count; ++i) d[t * count + i] = acc[i];
}

}  // namespace

void wgmma(const WgmmaCall& call, const float* c, float* d, float* d2) {
  convkit::launch(wgmma_kernel, dim3(1), dim3(128), call.offset + call.image_bytes, nullptr, call, c, d, d2);
}

}  // namespace sim_test_kernels
