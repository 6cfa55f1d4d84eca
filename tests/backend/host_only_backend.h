#pragma once
// A backend with the mandatory methods alone (type, devices, host memory):
// every op it is given runs through Backend's cpu fallback. It stands in for
// a new backend on its first day.
#include "convkit/backend/backend.h"

namespace convkit::testing {

class HostOnlyBackend : public Backend {
 public:
  DeviceType type() const override { return DeviceType::sim; }
  std::vector<BackendInfo> devices() const override;
  void* allocate(std::size_t nbytes) override;
  void deallocate(void* ptr, std::size_t nbytes) override;
  void copy_from_host(void* dst, const void* src, std::size_t nbytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t nbytes) override;
  void synchronize() override {}
};

// Makes the sim device a HostOnlyBackend for this process. The registry's
// public register_backend replaces the factory, which runs on first use, so
// this must come before anything touches sim: the binary that calls it (and
// only that one) runs no real sim test. Returns false when sim was made already.
bool route_sim_to_host_only_backend();

}  // namespace convkit::testing
