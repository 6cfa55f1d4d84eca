// The process-wide thread schedule of the sim backend. See convkit/sim/schedule.h.
#include "convkit/sim/schedule.h"

#include <charconv>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "convkit/core/error.h"

namespace convkit::sim {
namespace {

constexpr std::string_view kRandomPrefix = "random:";

std::mutex schedule_mutex;
std::optional<Schedule> chosen_schedule;  // empty until set or first read

Schedule schedule_from_environment() {
  const char* text = std::getenv("CONVKIT_SIM_SCHEDULE");
  if (text == nullptr || *text == '\0') return Schedule{};
  try {
    return Schedule::parse(text);
  } catch (const Error& e) {
    CK_FAIL("environment variable CONVKIT_SIM_SCHEDULE: ", e.what());
  }
}

}  // namespace

Schedule Schedule::parse(std::string_view text) {
  if (text == "forward") return Schedule{ScheduleOrder::forward, 0};
  if (text == "reverse") return Schedule{ScheduleOrder::reverse, 0};
  if (text.starts_with(kRandomPrefix)) {
    const std::string_view digits = text.substr(kRandomPrefix.size());
    std::uint64_t seed = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), seed);
    if (!digits.empty() && error == std::errc{} && end == digits.data() + digits.size()) {
      return Schedule{ScheduleOrder::random, seed};
    }
  }
  CK_FAIL("sim schedule '", text,
          "' not understood: expected forward, reverse or random:SEED (SEED a decimal integer)");
}

std::string Schedule::str() const {
  switch (order) {
    case ScheduleOrder::forward: return "forward";
    case ScheduleOrder::reverse: return "reverse";
    case ScheduleOrder::random: return std::string(kRandomPrefix) + std::to_string(seed);
  }
  return "?";
}

void set_schedule(const Schedule& schedule) {
  const std::lock_guard lock(schedule_mutex);
  chosen_schedule = schedule;
}

Schedule current_schedule() {
  const std::lock_guard lock(schedule_mutex);
  if (!chosen_schedule) chosen_schedule = schedule_from_environment();
  return *chosen_schedule;
}

}  // namespace convkit::sim
