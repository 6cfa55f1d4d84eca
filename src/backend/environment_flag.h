#pragma once
// A yes/no environment variable read strictly: 1 or true, 0 or false, or
// unset (an empty value counts as unset). Anything else is an Error naming
// the variable and its value, so that a typo never quietly means "off".
#include <cstdlib>
#include <optional>
#include <string>

#include "convkit/core/error.h"

namespace convkit::detail {

inline std::optional<bool> environment_flag(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  const std::string s = v;
  if (s == "1" || s == "true") return true;
  if (s == "0" || s == "false") return false;
  CK_FAIL(name, "=", s, " is not one of 1, true, 0, false");
}

}  // namespace convkit::detail
