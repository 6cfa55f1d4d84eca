// Describing regions and laying them into the shadow. See regions.h.
#include "sim/check/regions.h"

#include <sstream>

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
