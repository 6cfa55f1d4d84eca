#pragma once
// Peak rates of the GPUs the sim performance model (profile.h) estimates for,
// from NVIDIA's data sheets and architecture whitepapers:
//
//   H100 SXM5 80GB  "NVIDIA H100 Tensor Core GPU" datasheet: FP32 67 TFLOPS,
//                   HBM3 3.35 TB/s; H100 whitepaper: 132 SMs; 67 TFLOPS =
//                   132 SMs x 128 FP32 lanes x 2 x 1.98 GHz boost. Tensor
//                   cores (same datasheet, "with sparsity" figures halved to
//                   dense): TF32 494.7 TFLOPS (989 sparse), BF16 989.4
//                   (1,979 sparse).
//   A100 SXM4 80GB  "NVIDIA A100 Tensor Core GPU" datasheet: FP32 19.5 TFLOPS,
//                   HBM2e 2,039 GB/s; A100 whitepaper: 108 SMs, 1.41 GHz boost.
//                   Tensor cores, dense: TF32 156 TFLOPS, BF16 312 TFLOPS.
//   V100 SXM2       "NVIDIA Tesla V100" datasheet: FP32 15.7 TFLOPS, HBM2
//                   900 GB/s; V100 whitepaper: 80 SMs, 1.53 GHz boost. Its
//                   tensor cores take FP16 only: no TF32 or BF16 rate (0).
//
// No data sheet states shared-memory bandwidth. The CUDA C++ Programming Guide
// (compute capabilities 5.x to 9.0) gives 32 banks of 4 bytes each per clock
// per SM, so it is SMs x 128 bytes x boost clock, one 128-byte wavefront per
// SM per clock.
#include <string_view>
#include <vector>

namespace convkit::sim {

struct GpuSpec {
  std::string_view name;
  double fp32_flops;          // FLOP/s, FMA = 2
  double hbm_bytes_per_s;
  int sms;
  double boost_hz;
  double tf32_flops = 0;  // dense tensor-core FLOP/s; 0 where the GPU has none
  double bf16_flops = 0;
  double shared_bytes_per_s() const { return sms * 128.0 * boost_hz; }
};

inline const std::vector<GpuSpec>& gpu_specs() {
  static const std::vector<GpuSpec> specs = {
      {"H100", 67.0e12, 3.35e12, 132, 1.98e9, 494.7e12, 989.4e12},
      {"A100", 19.5e12, 2.039e12, 108, 1.41e9, 156.0e12, 312.0e12},
      {"V100", 15.7e12, 0.900e12, 80, 1.53e9},
  };
  return specs;
}

// "H100", "a100", ...; throws convkit::Error naming the known GPUs otherwise
// (profile.cpp).
const GpuSpec& gpu_spec(std::string_view name);

}  // namespace convkit::sim
