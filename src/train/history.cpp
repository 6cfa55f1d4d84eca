#include "convkit/train/history.h"

#include <cmath>

#include "convkit/core/error.h"

namespace convkit::train {

void EpochLogs::set(const std::string& name, double value) {
  for (auto& [key, v] : values)
    if (key == name) {
      v = value;
      return;
    }
  values.emplace_back(name, value);
}

bool EpochLogs::has(const std::string& name) const { return find(name).has_value(); }

std::optional<double> EpochLogs::find(const std::string& name) const {
  for (const auto& [key, v] : values)
    if (key == name) return v;
  return std::nullopt;
}

double EpochLogs::at(const std::string& name) const {
  if (auto v = find(name)) return *v;
  std::string known;
  for (const auto& [key, v] : values) known += (known.empty() ? "" : ", ") + key;
  CK_FAIL("metric '", name, "' was not recorded for epoch ", epoch + 1, " (recorded: ",
          known.empty() ? "none" : known, ")");
}

std::vector<double> History::metric(const std::string& name) const {
  std::vector<double> out;
  out.reserve(epochs.size());
  for (const EpochLogs& e : epochs) out.push_back(e.at(name));
  return out;
}

const EpochLogs& History::last() const {
  CK_CHECK(!epochs.empty(), "History::last: no epoch was recorded");
  return epochs.back();
}

bool monitor_maximises(MonitorMode mode, const std::string& monitor) {
  if (mode == MonitorMode::max) return true;
  if (mode == MonitorMode::min) return false;
  return monitor.find("acc") != std::string::npos;
}

bool improves(double value, double best, bool maximise, double min_delta) {
  if (std::isnan(value)) return false;
  if (std::isnan(best)) return true;
  return maximise ? value - min_delta > best : value + min_delta < best;
}

}  // namespace convkit::train
