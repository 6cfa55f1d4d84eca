#include "dist/timeout_setting.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "convkit/core/error.h"

namespace convkit::dist {

double resolve_timeout_seconds(const ProcessGroupOptions& options) {
  const char* text = std::getenv(kTimeoutEnv);
  if (text == nullptr) {
    const double seconds = options.timeout_seconds;
    CK_CHECK(std::isfinite(seconds) && seconds > 0, "dist: ProcessGroupOptions::timeout_seconds is ", seconds,
             "; it must be a positive number of seconds");
    return seconds;
  }
  errno = 0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  const bool parsed = end != text && *end == '\0' && errno == 0;
  CK_CHECK(parsed && std::isfinite(seconds) && seconds > 0, "dist: ", kTimeoutEnv, "=\"", text,
           "\" is not a positive number of seconds");
  return seconds;
}

}  // namespace convkit::dist
