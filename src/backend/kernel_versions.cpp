#include "convkit/backend/kernel_versions.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "backend/environment_flag.h"
#include "convkit/core/error.h"

namespace convkit {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, KernelFamilyInfo> families;
  std::map<std::string, int> chosen;  // set_kernel_version overrides
};

Registry& registry() {
  static Registry r;
  return r;
}

struct Scope {
  std::string family;
  int version;
  std::uint64_t id;  // which ScopedKernelVersion made it
};

// This thread's ScopedKernelVersion entries, innermost last.
std::vector<Scope>& scoped_versions() {
  thread_local std::vector<Scope> scopes;
  return scopes;
}

int scoped_version(const std::string& family) {
  const auto& scopes = scoped_versions();
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it)
    if (it->family == family) return it->version;
  return 0;
}

int from_environment(const std::string& family) {
  std::string name = "CONVKIT_KERNEL_" + family;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  const char* v = std::getenv(name.c_str());
  if (!v || !*v) return 0;
  char* end = nullptr;
  const long version = std::strtol(v, &end, 10);
  CK_CHECK(end && *end == '\0', name, "=", v, " is not a version number");
  return static_cast<int>(version);
}

}  // namespace

bool wgmma_disabled_by_environment() {
  // A throwing initializer leaves the static uninitialized, so every call
  // with a bad value reports it again.
  static const bool disabled = detail::environment_flag("CONVKIT_DISABLE_WGMMA").value_or(false);
  return disabled;
}

void register_kernel_family(const KernelFamilyInfo& info) {
  CK_CHECK(info.versions >= 1 && info.default_version >= 1 && info.default_version <= info.versions,
           "register_kernel_family: ", info.family, " has ", info.versions, " versions and default ",
           info.default_version);
  std::lock_guard lock(registry().mutex);
  registry().families[info.family] = info;
}

std::vector<KernelFamilyInfo> kernel_families() {
  std::lock_guard lock(registry().mutex);
  std::vector<KernelFamilyInfo> out;
  for (const auto& [name, info] : registry().families) out.push_back(info);
  return out;
}

void set_kernel_version(const std::string& family, int version) {
  std::lock_guard lock(registry().mutex);
  auto it = registry().families.find(family);
  CK_CHECK(it != registry().families.end(), "set_kernel_version: unknown kernel family '", family, "'");
  CK_CHECK(version >= 0 && version <= it->second.versions, "set_kernel_version: ", family, " has versions 1..",
           it->second.versions, " (0 = default), got ", version);
  if (version == 0) registry().chosen.erase(family);
  else registry().chosen[family] = version;
}

int kernel_version(const std::string& family) {
  const int scoped = scoped_version(family);
  std::lock_guard lock(registry().mutex);
  auto it = registry().families.find(family);
  CK_CHECK(it != registry().families.end(), "kernel_version: unknown kernel family '", family, "'");
  if (scoped) {
    CK_CHECK(scoped <= it->second.versions, "ScopedKernelVersion: ", family, " has versions 1..",
             it->second.versions, ", got ", scoped);
    return scoped;
  }
  if (auto c = registry().chosen.find(family); c != registry().chosen.end()) return c->second;
  const int env = from_environment(family);
  CK_CHECK(env >= 0 && env <= it->second.versions, "CONVKIT_KERNEL_", family, "=", env, ": ", family,
           " has versions 1..", it->second.versions);
  return env ? env : it->second.default_version;
}

bool kernel_version_pinned(const std::string& family) {
  if (scoped_version(family) != 0) return true;
  {
    std::lock_guard lock(registry().mutex);
    if (registry().chosen.count(family) != 0) return true;
  }
  return from_environment(family) != 0;
}

std::vector<int> tuning_versions(const std::string& family) {
  if (kernel_version_pinned(family)) return {};
  std::lock_guard lock(registry().mutex);
  auto it = registry().families.find(family);
  CK_CHECK(it != registry().families.end(), "tuning_versions: unknown kernel family '", family, "'");
  std::vector<int> versions;
  for (int v = it->second.default_version; v <= it->second.versions; ++v) versions.push_back(v);
  return versions;
}

ScopedKernelVersion::ScopedKernelVersion(const std::string& family, int version) {
  if (version == 0) return;
  // The family may register later (launchers register on first use), so the
  // version is checked against it where kernel_version reads it.
  CK_CHECK(version > 0 && !family.empty(), "ScopedKernelVersion: needs a family and a version >= 1 (0 changes "
           "nothing), got '", family, "' ", version);
  thread_local std::uint64_t next_id = 0;
  id_ = ++next_id;
  scoped_versions().push_back({family, version, id_});
}

ScopedKernelVersion::~ScopedKernelVersion() {
  // Its own entry, even when scopes end out of order (held in optionals).
  auto& scopes = scoped_versions();
  for (auto it = scopes.begin(); it != scopes.end(); ++it)
    if (it->id == id_) {
      scopes.erase(it);
      return;
    }
}

}  // namespace convkit
