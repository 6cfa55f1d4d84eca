#pragma once
// The builders of convkit's own module types, which the spec registry
// (model_spec.cpp) installs before any lookup; defined next to the spec()
// writers they invert, in module_specs.cpp.
#include <functional>
#include <string>

#include "convkit/nn/model_spec.h"

namespace convkit::nn {

void register_builtin_module_types(
    const std::function<void(const std::string& type, ModuleBuilder builder)>& add);

}  // namespace convkit::nn
