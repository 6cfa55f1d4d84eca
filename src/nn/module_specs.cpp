// Module::spec() of every built-in module type: each writes its constructor
// arguments and the options that differ from their defaults, in the syntax of
// convkit/nn/model_spec.h. The matching builders are in model_registry.cpp.
#include "convkit/core/error.h"
#include "convkit/nn/model_spec.h"
#include "convkit/nn/module.h"

namespace convkit::nn {

std::string Module::spec() const {
  CK_FAIL("Module::spec: module type '", name(),
          "' has no spec; override spec() and register a builder with "
          "nn::register_module_type (see convkit/nn/model_spec.h)");
}

}  // namespace convkit::nn
