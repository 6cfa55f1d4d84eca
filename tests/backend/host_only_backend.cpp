#include "backend/host_only_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace convkit::testing {

std::vector<BackendInfo> HostOnlyBackend::devices() const {
  return {{"sim", true, "host-only test backend: every op falls back to cpu"}};
}

void* HostOnlyBackend::allocate(std::size_t nbytes) {
  void* p = std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  return p;
}

void HostOnlyBackend::deallocate(void* ptr, std::size_t) { std::free(ptr); }

void HostOnlyBackend::copy_from_host(void* dst, const void* src, std::size_t nbytes) {
  std::memcpy(dst, src, nbytes);
}

void HostOnlyBackend::copy_to_host(void* dst, const void* src, std::size_t nbytes) {
  std::memcpy(dst, src, nbytes);
}

namespace {
Backend* make_host_only_backend() { return new HostOnlyBackend; }
}  // namespace

bool route_sim_to_host_only_backend() {
  register_backend(DeviceType::sim, make_host_only_backend);
  return dynamic_cast<HostOnlyBackend*>(&backend_for(kSim)) != nullptr;
}

}  // namespace convkit::testing
