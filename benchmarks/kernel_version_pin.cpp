#include "kernel_version_pin.h"

#include <algorithm>

#include "convkit/backend/backend.h"
#include "convkit/backend/kernel_versions.h"

namespace convkit::bench {

namespace {

bool on_explicit_path(ConvAlgo algo, const std::string& family) {
  return algo == ConvAlgo::im2col_gemm && family != "conv2d_implicit_gemm" && !KernelVersionPin::tensor_cores(family);
}

const KernelFamilyInfo* find_family(const std::vector<KernelFamilyInfo>& families, const std::string& family) {
  for (const KernelFamilyInfo& f : families)
    if (f.family == family) return &f;
  return nullptr;
}

// A 3x3 layer every algorithm runs, small enough to cost nothing.
void run_tiny_forward(ConvAlgo algo, Device device) {
  Conv2dDesc d;
  d.C = d.K = 4;
  d.H = d.W = 8;
  d.R = d.S = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  Backend& backend = backend_for(device);
  if (!backend.conv2d_supports(algo, d)) return;
  const TensorOptions opts = TensorOptions().device(device);
  const Tensor x = zeros({d.N, d.C, d.H, d.W}, opts), w = zeros({d.K, d.C, d.R, d.S}, opts), b = zeros({d.K}, opts);
  Tensor y = empty({d.N, d.K, d.P(), d.Q()}, opts);
  const std::size_t bytes = backend.conv2d_workspace_bytes(algo, d, DType::float32, ConvPass::forward);
  const Tensor ws = bytes == 0 ? Tensor() : empty({static_cast<std::int64_t>((bytes + 3) / 4)}, opts);
  backend.conv2d_forward(algo, d, x, w, b, y, ws);
  backend.synchronize();
}

}  // namespace

std::vector<std::string> kernel_families_of(ConvAlgo algo) {
  switch (algo) {
    case ConvAlgo::direct: return {"conv2d_direct"};
    case ConvAlgo::im2col_gemm: return {"conv2d_implicit_gemm", "im2col", "gemm", "conv2d_implicit_gemm_tensor_core"};
    case ConvAlgo::fft: return {"conv2d_fft"};
    case ConvAlgo::winograd: return {"conv2d_winograd", "gemm"};
    default: return {};
  }
}

std::vector<std::string> all_conv_kernel_families() {
  std::vector<std::string> out;
  for (const ConvAlgoInfo& info : kConvAlgorithms)
    for (const std::string& f : kernel_families_of(info.algo))
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  return out;
}

int kernel_family_versions(ConvAlgo algo, const std::string& family, Device device) {
  if (device.type == DeviceType::cpu) return 0;
  if (const KernelFamilyInfo* f = find_family(kernel_families(), family)) return f->versions;
  // The explicit path's families register under conv2d_implicit_gemm v1, which registers first.
  if (on_explicit_path(algo, family) && kernel_family_versions(algo, "conv2d_implicit_gemm", device) == 0) return 0;
  {
    const ScopedFloat32Precision precision(KernelVersionPin::precision_for(family));
    if (on_explicit_path(algo, family)) set_kernel_version("conv2d_implicit_gemm", 1);
    try {
      run_tiny_forward(algo, device);
    } catch (...) {
      // The family stays unknown: the caller times the default row, which reports the error.
    }
    if (on_explicit_path(algo, family)) set_kernel_version("conv2d_implicit_gemm", 0);
  }
  const KernelFamilyInfo* f = find_family(kernel_families(), family);
  return f ? f->versions : 0;
}

int kernel_family_default(const std::string& family) {
  const KernelFamilyInfo* f = find_family(kernel_families(), family);
  return f ? f->default_version : 0;
}

Float32Precision KernelVersionPin::precision_for(const std::string& family) {
  if (!tensor_cores(family)) return Float32Precision::highest;
  return float32_precision() == Float32Precision::medium ? Float32Precision::medium : Float32Precision::high;
}

KernelVersionPin::KernelVersionPin(ConvAlgo algo, const std::string& family, int version)
    : precision_(precision_for(family)), family_(family), explicit_path_(on_explicit_path(algo, family)) {
  if (explicit_path_) set_kernel_version("conv2d_implicit_gemm", 1);
  set_kernel_version(family_, version);
}

KernelVersionPin::~KernelVersionPin() {
  set_kernel_version(family_, 0);
  if (explicit_path_) set_kernel_version("conv2d_implicit_gemm", 0);
}

}  // namespace convkit::bench
