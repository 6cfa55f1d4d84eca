// Device memory of the sim backend (runtime.h: global_allocate/global_free).
// While a check or the profile is on, an allocation is exact-sized between two guard zones,
// so memcheck sees a vector tail that reads one element past the end; else it
// is rounded up to 256 bytes, like cudaMalloc.
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>

#include "convkit/core/error.h"
#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "convkit/sim/runtime.h"
#include "sim/check/regions.h"
#include "sim/check/shadow.h"

namespace convkit::sim {
namespace detail {
namespace {

constexpr std::size_t kAlign = 256;  // cudaMalloc's alignment, so vector loads behave alike
constexpr std::size_t kGuardBytes = 256;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

struct GlobalRegions {
  std::mutex mutex;
  std::map<std::uintptr_t, std::unique_ptr<Region>> by_begin;
};

GlobalRegions& global_regions() {
  static GlobalRegions* regions = new GlobalRegions;  // never destroyed: frees may come late
  return *regions;
}

}  // namespace

Region* find_global_region(std::uintptr_t address) {
  GlobalRegions& g = global_regions();
  const std::lock_guard lock(g.mutex);
  // The region at or below the address, or the one above (its front guard).
  auto above = g.by_begin.upper_bound(address);
  if (above != g.by_begin.end() && above->second->within_guards(address)) return above->second.get();
  if (above == g.by_begin.begin()) return nullptr;
  Region* below = std::prev(above)->second.get();
  return below->within_guards(address) ? below : nullptr;
}

void track_global_regions(bool tracked) {
  GlobalRegions& g = global_regions();
  const std::lock_guard lock(g.mutex);
  for (auto& [begin, region] : g.by_begin) {
    if (region->tracked == tracked) continue;
    region->tracked = tracked;
    shadow_mark_body(region->begin, region->bytes, tracked);
  }
}

}  // namespace detail

void* global_allocate(std::size_t nbytes) {
  using namespace detail;
  // The performance model needs the accesses too (profile.h).
  const bool watched = current_checks().racecheck || profiling();
  if (!current_checks().any() && !profiling()) {
    void* p = std::aligned_alloc(kAlign, round_up(nbytes, kAlign));
    CK_CHECK(p != nullptr, "sim: out of memory allocating ", nbytes, " bytes");
    return p;
  }
  std::unique_ptr<Region> region = allocate_guarded(nbytes, kGuardBytes, kAlign, RegionKind::global);
  region->tracked = watched;
  mark_region(*region);
  GlobalRegions& g = global_regions();
  const std::lock_guard lock(g.mutex);
  void* p = reinterpret_cast<void*>(region->begin);
  g.by_begin.emplace(region->begin, std::move(region));
  return p;
}

void global_free(void* p) {
  using namespace detail;
  if (p == nullptr) return;
  GlobalRegions& g = global_regions();
  std::unique_lock lock(g.mutex);
  const auto it = g.by_begin.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == g.by_begin.end()) {  // made while no check was on
    lock.unlock();
    std::free(p);
    return;
  }
  const std::unique_ptr<Region> region = std::move(it->second);
  g.by_begin.erase(it);
  lock.unlock();
  unmark_region(*region);
  free_guarded(*region);
}

}  // namespace convkit::sim
