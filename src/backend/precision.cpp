#include "convkit/backend/precision.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "convkit/core/error.h"

namespace convkit {

namespace {

// A typo must not silently leave strict float32 on (or turn it off).
bool from_environment() {
  const char* v = std::getenv("CONVKIT_ALLOW_TF32");
  if (v == nullptr || *v == '\0') return false;
  const std::string s = v;
  if (s == "1" || s == "true") return true;
  if (s == "0" || s == "false") return false;
  CK_FAIL("CONVKIT_ALLOW_TF32=", s, " is not one of 1, true, 0, false");
}

std::atomic<bool>& setting() {
  static std::atomic<bool> allowed{from_environment()};
  return allowed;
}

}  // namespace

bool allow_tf32() { return setting().load(std::memory_order_relaxed); }
void set_allow_tf32(bool allowed) { setting().store(allowed, std::memory_order_relaxed); }

}  // namespace convkit
