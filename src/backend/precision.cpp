#include "convkit/backend/precision.h"

#include <atomic>
#include <cstdlib>
#include <optional>

#include "backend/environment_flag.h"
#include "convkit/core/error.h"

namespace convkit {

namespace {

std::optional<std::string> environment(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

Float32Precision from_environment() {
  std::optional<Float32Precision> tf32;
  if (const auto allow = detail::environment_flag("CONVKIT_ALLOW_TF32"))
    tf32 = *allow ? Float32Precision::high : Float32Precision::highest;
  const auto named = environment("CONVKIT_FLOAT32_PRECISION");
  if (!named) return tf32.value_or(Float32Precision::highest);
  Float32Precision p;
  try {
    p = parse_float32_precision(*named);
  } catch (const Error&) {
    CK_FAIL("CONVKIT_FLOAT32_PRECISION=", *named, " is not one of highest, high, medium");
  }
  CK_CHECK(!tf32 || *tf32 == p, "CONVKIT_FLOAT32_PRECISION=", *named, " and CONVKIT_ALLOW_TF32=",
           *environment("CONVKIT_ALLOW_TF32"), " disagree; set one of them");
  return p;
}

std::atomic<Float32Precision>& setting() {
  static std::atomic<Float32Precision> precision{from_environment()};
  return precision;
}

}  // namespace

Float32Precision float32_precision() { return setting().load(std::memory_order_relaxed); }
void set_float32_precision(Float32Precision precision) { setting().store(precision, std::memory_order_relaxed); }

std::string to_string(Float32Precision precision) {
  switch (precision) {
    case Float32Precision::highest: return "highest";
    case Float32Precision::high: return "high";
    case Float32Precision::medium: return "medium";
  }
  return "unknown";
}

Float32Precision parse_float32_precision(const std::string& name) {
  for (Float32Precision p : {Float32Precision::highest, Float32Precision::high, Float32Precision::medium})
    if (name == to_string(p)) return p;
  CK_FAIL("float32 precision '", name, "' is not one of highest, high, medium");
}

double operand_unit_roundoff(Float32Precision precision) {
  switch (precision) {
    case Float32Precision::highest: return 0.0;
    case Float32Precision::high: return 0x1p-11;
    case Float32Precision::medium: return 0x1p-8;
  }
  return 0.0;
}

bool allow_tf32() { return float32_precision() != Float32Precision::highest; }
void set_allow_tf32(bool allowed) {
  set_float32_precision(allowed ? Float32Precision::high : Float32Precision::highest);
}

}  // namespace convkit
