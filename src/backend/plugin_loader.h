#pragma once
// Loads backend plugins: shared libraries installed beside libconvkit.so whose
// static BackendRegistrar registers their backend when the library is opened.
// The core never links a plugin, so a CUDA-enabled install starts on machines
// without the CUDA runtime, and consumers need no CUDA toolkit.
#include <string>

#include "convkit/core/device.h"

namespace convkit {

// The plugin file that provides `type`'s backend, or nullptr for backends that
// are always built in (cpu, sim).
const char* backend_plugin_file(DeviceType type);

// Opens `type`'s plugin (backend_plugin_file(type) must name one), once per
// process. Returns "" once the plugin is open,
// else why it is not: absent, static build, or a library it needs (the CUDA
// runtime) is missing. CONVKIT_PLUGIN_DIR overrides the folder searched.
const std::string& load_backend_plugin(DeviceType type);

}  // namespace convkit
