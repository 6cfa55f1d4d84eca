#pragma once
// Every GPU kernel family keeps its numbered versions, from the simplest that
// is obviously right to the fastest (llm.c style), and every version stays
// selectable: by API, or by the environment variable
// CONVKIT_KERNEL_<FAMILY>=<version> (e.g. CONVKIT_KERNEL_GEMM=1). Version 0
// means "the family's default", which is its fastest correct version.
#include <string>
#include <vector>

namespace convkit {

struct KernelFamilyInfo {
  std::string family;       // "gemm", "conv2d_direct", ...
  int versions = 1;         // valid versions are 1..versions
  int default_version = 1;
  std::string description;  // one line per version, for `convkit devices -v` and docs
};

// Called once per family by its launcher file, before first use.
void register_kernel_family(const KernelFamilyInfo& info);
std::vector<KernelFamilyInfo> kernel_families();

// 0 restores the default. Throws Error for an unknown family or version.
void set_kernel_version(const std::string& family, int version);
// The version a launcher should run now: set_kernel_version, else the
// environment variable, else the family's default.
int kernel_version(const std::string& family);
// Whether set_kernel_version or the environment variable chose the family's
// version (rather than its default): for a path that runs a family only when
// asked for it (the tensor-core convolution under reduced precision).
bool kernel_version_pinned(const std::string& family);

}  // namespace convkit
