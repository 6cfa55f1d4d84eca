// Per-launch state of the sim checks. See launch_checks.h.
#include "sim/check/launch_checks.h"

#include <atomic>

namespace convkit::sim::detail {
namespace {

// Shown in full; the rest are counted.
constexpr std::size_t kMaxHazardsShown = 10;

std::atomic<std::uint32_t> next_block_serial{1};  // 0 marks "no access" in WordState

}  // namespace

LaunchChecks::LaunchChecks(const Checks& checks, const void* kernel, dim3 grid, dim3 block)
    : checks_(checks), kernel_(kernel), grid_(grid), block_(block), first_serial_(next_block_serial.load()) {}

std::uint32_t LaunchChecks::begin_block(uint3 block_index) {
  const std::lock_guard lock(mutex_);
  const std::uint32_t serial = next_block_serial.fetch_add(1);
  const std::size_t run = serial - first_serial_;
  if (block_of_run_.size() <= run) block_of_run_.resize(run + 1);
  block_of_run_[run] = block_index;
  return serial;
}

uint3 LaunchChecks::block_of(std::uint32_t serial) {
  const std::lock_guard lock(mutex_);
  const std::size_t run = serial - first_serial_;
  return run < block_of_run_.size() ? block_of_run_[run] : uint3{0, 0, 0};
}

std::vector<std::string> LaunchChecks::render(bool across_blocks) {
  std::vector<std::string> out;
  std::size_t hidden = 0;
  for (const auto& [key, entry] : hazards_) {
    if (std::get<1>(key) != across_blocks) continue;
    if (out.size() == kMaxHazardsShown) {
      ++hidden;
      continue;
    }
    out.push_back(entry.report.render() + " (seen " + std::to_string(entry.count) +
                  (entry.count == 1 ? " time)" : " times)"));
  }
  if (hidden > 0) out.push_back("... and " + std::to_string(hidden) + " more pairs of lines");
  return out;
}

std::string LaunchChecks::in_block_report() {
  const std::lock_guard lock(mutex_);
  const std::vector<std::string> lines = render(false);
  if (lines.empty()) return "";
  std::size_t races = 0;
  for (const auto& [key, entry] : hazards_) races += std::get<1>(key) ? 0 : 1;
  std::string out = "sim racecheck: " + std::to_string(races) + " data race" + (races == 1 ? "" : "s") +
                    " in kernel " + Finding().function(kernel_).render() + ":";
  for (const std::string& line : lines) out += "\n  " + line;
  return out;
}

std::vector<std::string> LaunchChecks::across_block_reports() {
  const std::lock_guard lock(mutex_);
  std::vector<std::string> out = render(true);
  const std::string kernel = out.empty() ? "" : Finding().function(kernel_).render();
  for (std::string& line : out) line = "sim racecheck (between blocks, launch goes on): kernel " + kernel + ": " + line;
  return out;
}

}  // namespace convkit::sim::detail
