#pragma once
// Helpers for the raw GPU kernel tests: the GPU devices to run on (sim always,
// switched on for these binaries even while it is opt-in elsewhere; cuda when
// usable) and a scoped kernel-version choice.
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "support/support.h"

namespace convkit::testing {

// The sim backend is opt-in (CONVKIT_ENABLE_SIM) until every kernel family has
// landed; a kernel family's own tests always run on it.
inline void enable_sim_backend() { setenv("CONVKIT_ENABLE_SIM", "1", 1); }

inline std::vector<Device> gpu_devices() {
  enable_sim_backend();
  std::vector<Device> out;
  for (const BackendInfo& info : list_backends())
    if (info.usable && info.name != "cpu") out.push_back(Device::parse(info.name));
  return out;
}

// Runs the enclosed code with `family` at `version`, then restores the default.
class ScopedKernelVersion {
 public:
  ScopedKernelVersion(std::string family, int version) : family_(std::move(family)) {
    set_kernel_version(family_, version);
  }
  ~ScopedKernelVersion() { set_kernel_version(family_, 0); }
  ScopedKernelVersion(const ScopedKernelVersion&) = delete;
  ScopedKernelVersion& operator=(const ScopedKernelVersion&) = delete;

 private:
  std::string family_;
};

}  // namespace convkit::testing
