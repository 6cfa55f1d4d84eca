#pragma once
// Every GPU kernel family keeps its numbered versions, from the simplest that
// is obviously right to the fastest (llm.c style), and every version stays
// selectable: by API, or by the environment variable
// CONVKIT_KERNEL_<FAMILY>=<version> (e.g. CONVKIT_KERNEL_GEMM=1). Version 0
// means "the family's default", which is its fastest correct version.
#include <cstdint>
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

// Whether CONVKIT_DISABLE_WGMMA (1 or true; 0, false or unset leave them
// on) keeps every kernel that runs wgmma (sm_90a) from running, as if the
// device had none: their cannot_implement says so, and the versions before
// them run. For comparing a GPU's results with and without those kernels,
// and for gpu-check's rerun of a test binary that failed (a faulting kernel
// takes every later test of its process with it). Read once; any other value
// is an Error at every call, naming the variable.
bool wgmma_disabled_by_environment();

// The versions of `family` a tuner should time: its default and every later
// version. Later ones are candidates not yet measured to win on every shape;
// earlier ones are the simple twins the default replaced. Empty when
// set_kernel_version or the environment pins the family: the user's choice
// stands.
std::vector<int> tuning_versions(const std::string& family);

// Runs `family` at `version` on this thread while it lives, ahead of
// set_kernel_version and the environment (0 changes nothing): how a tuned
// convolution plan (convkit/ops/conv_algo.h) runs the version it measured
// for one call without changing the process's choice for other shapes or
// threads. Scopes nest; each ends on the thread that made it. A version the
// family lacks is an Error where kernel_version reads it (families register
// on first use).
class ScopedKernelVersion {
 public:
  ScopedKernelVersion(const std::string& family, int version);
  ~ScopedKernelVersion();
  ScopedKernelVersion(const ScopedKernelVersion&) = delete;
  ScopedKernelVersion& operator=(const ScopedKernelVersion&) = delete;

 private:
  std::uint64_t id_ = 0;  // its entry in this thread's scopes (0: version 0, none)
};

}  // namespace convkit
