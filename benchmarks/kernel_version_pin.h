#pragma once
// Which GPU kernel families a convolution algorithm runs, how many versions
// each has, and pinning one version for a scope. bench_conv's --sim-profile
// and --kernel-versions both walk the versions this way, so that a profile
// and a timed row of the same family and version run the same kernels.
#include <convkit/convkit.h>

#include <string>
#include <vector>

#include "convkit/backend/precision.h"

namespace convkit::bench {

// The families whose versions change how `algo` runs. conv2d_implicit_gemm v1
// is im2col_gemm's explicit path, the one im2col's and gemm's versions change;
// the tensor-core family runs under allow_tf32.
std::vector<std::string> kernel_families_of(ConvAlgo algo);

// Every family kernel_families_of names for some algorithm.
std::vector<std::string> all_conv_kernel_families();

// How many versions `family` has, 0 where `device` never runs it (the cpu).
// A family registers when its launcher first runs, so an unknown one is
// registered by one tiny forward pass of `algo` on `device` under its pin.
int kernel_family_versions(ConvAlgo algo, const std::string& family, Device device);
int kernel_family_default(const std::string& family);

// While alive: `family` at `version` (0: its default), im2col_gemm's explicit
// path for the families only that path runs (im2col, gemm), and the tensor
// cores on for the tensor-core family only: float32 precision `high` (tf32),
// or `medium` (bf16) when that is what the process runs at
// (CONVKIT_FLOAT32_PRECISION=medium); every other family strict.
class KernelVersionPin {
 public:
  KernelVersionPin(ConvAlgo algo, const std::string& family, int version);
  ~KernelVersionPin();
  KernelVersionPin(const KernelVersionPin&) = delete;
  KernelVersionPin& operator=(const KernelVersionPin&) = delete;

  static bool tensor_cores(const std::string& family) { return family == "conv2d_implicit_gemm_tensor_core"; }
  // The float32 precision `family` runs at under its pin.
  static Float32Precision precision_for(const std::string& family);

 private:
  ScopedFloat32Precision precision_;
  std::string family_;
  bool explicit_path_;
};

}  // namespace convkit::bench
