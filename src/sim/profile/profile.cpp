// The process-wide state of the sim performance model: whether it is on, and
// the counters of each kernel since the last take_profile(). See
// convkit/sim/profile.h.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convkit/core/error.h"
#include "convkit/sim/arithmetic_count.h"
#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "sim/block_scheduler.h"
#include "sim/check/symbolize.h"
#include "sim/profile/profile_store.h"

namespace convkit::sim {
namespace detail {

bool counting_arithmetic = false;

void add_fmas(std::uint64_t n) {
  if (BlockScheduler* s = BlockScheduler::running()) s->add_fmas(n);
}

namespace {

struct Store {
  std::mutex mutex;
  std::optional<bool> on;  // empty until set or first read
  std::vector<std::pair<const void*, KernelProfile>> kernels;  // in first-run order
};

// Never destroyed: the report at exit runs after other statics may be gone.
Store& store() {
  static Store* s = new Store;
  return *s;
}

void print_at_exit() {
  const char* gpu_name = std::getenv("CONVKIT_SIM_PROFILE_GPU");
  try {
    const GpuSpec& gpu = gpu_spec(gpu_name != nullptr && *gpu_name != '\0' ? gpu_name : "H100");
    const std::vector<KernelProfile> profiles = take_profile();
    if (!profiles.empty()) std::fprintf(stderr, "%s", format_profile(profiles, gpu).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sim profile: %s\n", e.what());
  }
}

bool from_environment() {
  const char* text = std::getenv("CONVKIT_SIM_PROFILE");
  if (text == nullptr || *text == '\0' || std::string(text) == "0") return false;
  CK_CHECK(std::string(text) == "1", "environment variable CONVKIT_SIM_PROFILE=", text,
           ": expected 1 (profile every sim launch and print the counters at exit) or 0");
  CK_CHECK(checks_available(), "environment variable CONVKIT_SIM_PROFILE=1: the sim profile needs kernels built "
           "with the sim instrumentation (-DCONVKIT_SIM_CHECKS=ON, impossible together with CONVKIT_SANITIZE)");
  std::atexit(print_at_exit);
  return true;
}

}  // namespace

void add_launch_profile(const void* kernel, const KernelProfile& launch) {
  Store& s = store();
  const std::lock_guard lock(s.mutex);
  for (auto& [k, p] : s.kernels) {
    if (k == kernel) {
      p += launch;
      return;
    }
  }
  s.kernels.emplace_back(kernel, launch);
}

std::string short_kernel_name(const std::string& demangled) {
  std::string name = demangled;
  for (const std::string noise : {"(anonymous namespace)::", "convkit::gpu_sim::", "convkit::gpu_cuda::"}) {
    for (std::size_t at; (at = name.find(noise)) != std::string::npos;) name.erase(at, noise.size());
  }
  // A function template's name comes with its return type.
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);
  // The parameter list starts at the first '(' outside template arguments.
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0) return name.substr(0, i);
  }
  return name;
}

}  // namespace detail

void set_profiling(bool on) {
  CK_CHECK(!on || checks_available(), "the sim profile needs kernels built with the sim instrumentation: "
           "configure with -DCONVKIT_SIM_CHECKS=ON (impossible together with CONVKIT_SANITIZE)");
  detail::Store& s = detail::store();
  const std::lock_guard lock(s.mutex);
  s.on = on;
  detail::counting_arithmetic = on;
}

bool profiling() {
  detail::Store& s = detail::store();
  const std::lock_guard lock(s.mutex);
  if (!s.on) {
    s.on = detail::from_environment();
    detail::counting_arithmetic = *s.on;
  }
  return *s.on;
}

std::vector<KernelProfile> take_profile() {
  std::vector<std::pair<const void*, KernelProfile>> taken;
  {
    detail::Store& s = detail::store();
    const std::lock_guard lock(s.mutex);
    taken = std::exchange(s.kernels, {});
  }
  std::vector<const void*> addresses;
  for (const auto& [kernel, profile] : taken) addresses.push_back(kernel);
  const std::vector<detail::CodeLocation> where =
      addresses.empty() ? std::vector<detail::CodeLocation>{} : detail::symbolize(addresses, false);
  // Two addresses can carry one name (one kernel linked twice): merge them.
  std::vector<KernelProfile> out;
  for (std::size_t i = 0; i < taken.size(); ++i) {
    KernelProfile p = taken[i].second;
    p.kernel = i < where.size() ? detail::short_kernel_name(where[i].function) : "?";
    auto same = std::find_if(out.begin(), out.end(), [&](const KernelProfile& o) { return o.kernel == p.kernel; });
    if (same != out.end()) {
      *same += p;
    } else {
      out.push_back(std::move(p));
    }
  }
  return out;
}

const GpuSpec& gpu_spec(std::string_view name) {
  std::string known;
  for (const GpuSpec& g : gpu_specs()) {
    if (g.name.size() == name.size() &&
        std::equal(name.begin(), name.end(), g.name.begin(),
                   [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; }))
      return g;
    known += known.empty() ? "" : ", ";
    known += g.name;
  }
  CK_FAIL("unknown GPU '", name, "' for the sim profile's estimate; known: ", known);
}

ScopedProfile::ScopedProfile() : previous_(profiling()) {
  (void)take_profile();
  set_profiling(true);
}

ScopedProfile::~ScopedProfile() { set_profiling(previous_); }

}  // namespace convkit::sim
