#include "backend/plugin_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "convkit/backend/backend.h"

namespace convkit {

namespace {

namespace fs = std::filesystem;

// The folder of the library (or program) this function was linked into:
// libconvkit.so's own folder in a shared build.
struct CoreLocation {
  fs::path file;
  bool shared = false;  // false: convkit is linked statically into `file`
};

CoreLocation core_location() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&load_backend_plugin), &info) == 0 || !info.dli_fname)
    return {};
  std::error_code ec;
  const fs::path file = fs::weakly_canonical(fs::absolute(info.dli_fname), ec);
  return {file, file.filename().string().starts_with("libconvkit.so")};
}

std::string open_plugin(DeviceType type) {
  const char* file = backend_plugin_file(type);
  const char* dir_override = std::getenv("CONVKIT_PLUGIN_DIR");
  fs::path dir;
  if (dir_override && *dir_override) {
    dir = dir_override;
  } else {
    const CoreLocation core = core_location();
    // A second copy of the core, loaded by the plugin's own dependency on
    // libconvkit.so, would hold a second registry: plugins need the shared core.
    if (!core.shared)
      return "no plugin: convkit is linked statically into " + core.file.string() +
             ", and backend plugins load only beside the shared libconvkit.so";
    dir = core.file.parent_path();
  }
  const fs::path path = dir / file;
  std::error_code ec;
  if (!fs::exists(path, ec))
    return "no plugin: " + std::string(file) + " is not in " + dir.string() +
           " (a build without nvcc has none)";
  // RTLD_NOW: a missing symbol or library fails here, with its name, and not
  // in the middle of a training step.
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    const char* why = dlerror();
    return "plugin " + path.string() + " cannot be loaded (is the CUDA runtime installed?): " +
           (why ? why : "unknown dlopen error");
  }
  return "";
}

}  // namespace

const char* backend_plugin_file(DeviceType type) {
  return type == DeviceType::cuda ? "libconvkit_cuda.so" : nullptr;
}

const std::string& load_backend_plugin(DeviceType type) {
  struct Attempt {
    std::once_flag once;
    std::string reason;
  };
  static Attempt attempts[3];  // one per DeviceType
  Attempt& a = attempts[static_cast<std::size_t>(type)];
  std::call_once(a.once, [&] { a.reason = open_plugin(type); });
  return a.reason;
}

}  // namespace convkit
