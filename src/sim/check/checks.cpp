// The process-wide choice of sim checks. See convkit/sim/check.h.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convkit/core/error.h"
#include "convkit/sim/check.h"
#include "sim/check/launch_checks.h"
#include "sim/check/shadow.h"

namespace convkit::sim {
namespace {

std::mutex checks_mutex;
std::optional<Checks> chosen_checks;  // empty until set or first read
std::vector<std::string> warnings;

void require_available(const Checks& checks) {
  CK_CHECK(!checks.any() || checks_available(), "sim checks (", checks.str(),
           ") need kernels built with the sim instrumentation: configure with -DCONVKIT_SIM_CHECKS=ON "
           "(impossible together with CONVKIT_SANITIZE)");
}

Checks checks_from_environment() {
  const char* text = std::getenv("CONVKIT_SIM_CHECK");
  if (text == nullptr) return Checks{};
  try {
    const Checks checks = Checks::parse(text);
    require_available(checks);
    return checks;
  } catch (const Error& e) {
    CK_FAIL("environment variable CONVKIT_SIM_CHECK: ", e.what());
  }
}

}  // namespace

Checks Checks::parse(std::string_view text) {
  Checks checks;
  if (text.empty() || text == "none") return checks;
  if (text == "all") return all();
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view word = text.substr(0, comma);
    if (word == "memcheck") {
      checks.memcheck = true;
    } else if (word == "racecheck") {
      checks.racecheck = true;
    } else if (word == "initcheck") {
      checks.initcheck = true;
    } else {
      CK_FAIL("sim check '", word,
              "' not understood: expected a comma-separated list of memcheck, racecheck and "
              "initcheck, or all, or none");
    }
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return checks;
}

std::string Checks::str() const {
  std::string out;
  for (const auto& [on, name] : {std::pair{memcheck, "memcheck"}, std::pair{racecheck, "racecheck"},
                                 std::pair{initcheck, "initcheck"}}) {
    if (!on) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out.empty() ? "none" : out;
}

bool checks_available() { return detail::shadow_available(); }

void set_checks(const Checks& checks) {
  require_available(checks);
  const std::lock_guard lock(checks_mutex);
  chosen_checks = checks;
}

Checks current_checks() {
  const std::lock_guard lock(checks_mutex);
  if (!chosen_checks) chosen_checks = checks_from_environment();
  return *chosen_checks;
}

std::vector<std::string> take_check_warnings() {
  const std::lock_guard lock(checks_mutex);
  return std::exchange(warnings, {});
}

namespace detail {

void add_check_warning(const std::string& warning) {
  std::fprintf(stderr, "%s\n", warning.c_str());
  const std::lock_guard lock(checks_mutex);
  warnings.push_back(warning);
}

}  // namespace detail
}  // namespace convkit::sim
