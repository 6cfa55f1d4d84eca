// Describing regions and laying them into the shadow. See regions.h.
#include "sim/check/regions.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "convkit/core/error.h"

#include "sim/check/shadow.h"
#include "sim/check/symbolize.h"

namespace convkit::sim::detail {

std::string Region::describe() const {
  std::ostringstream os;
  switch (kind) {
    case RegionKind::global:
      os << "the " << bytes << "-byte device allocation at " << reinterpret_cast<const void*>(begin);
      break;
    case RegionKind::static_shared:
      os << "the " << bytes << "-byte __shared__ array declared at " << project_relative(file) << ":" << line;
      break;
    case RegionKind::dynamic_shared:
      os << "the block's " << bytes << " bytes of dynamic shared memory";
      break;
  }
  return os.str();
}

std::unique_ptr<Region> allocate_guarded(std::size_t bytes, std::size_t guard, std::size_t align, RegionKind kind) {
  const std::size_t total = (guard + bytes + guard + align - 1) / align * align;
  auto* base = static_cast<unsigned char*>(std::aligned_alloc(align, total));
  CK_CHECK(base != nullptr, "sim: out of memory allocating ", bytes, " bytes");
  std::memset(base, 0, total);
  auto region = std::make_unique<Region>();
  region->begin = reinterpret_cast<std::uintptr_t>(base + guard);
  region->bytes = bytes;
  region->guard_before = guard;
  region->guard_after = total - guard - bytes;
  region->kind = kind;
  return region;
}

void free_guarded(const Region& region) { std::free(reinterpret_cast<void*>(region.begin - region.guard_before)); }

void mark_region(const Region& region) {
  shadow_fill(region.begin - region.guard_before, region.guard_before, kShadowGuard);
  // The guard after the body starts at the next granule; a partial last granule
  // of the body carries its own count of valid bytes (or is tracked).
  const std::uintptr_t body_end = (region.end() + kGranule - 1) / kGranule * kGranule;
  const std::uintptr_t guard_end = region.end() + region.guard_after;
  if (guard_end > body_end) shadow_fill(body_end, guard_end - body_end, kShadowGuard);
  shadow_mark_body(region.begin, region.bytes, region.tracked);
}

void unmark_region(const Region& region) {
  shadow_fill(region.begin - region.guard_before,
              region.guard_before + region.bytes + region.guard_after, 0);
}

}  // namespace convkit::sim::detail
