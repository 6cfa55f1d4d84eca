// libFuzzer: parse and build a model spec (under a small budget) from
// arbitrary text, and check that a built model's spec builds again.
#include <cstdlib>
#include <string>

#include "convkit/core/error.h"
#include "convkit/nn/model_spec.h"
#include "convkit/nn/module.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace convkit;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string spec;
  try {
    spec = nn::build_module(text, nn::BuildOptions().max_bytes(fuzz::kBuildBudget))->spec();
  } catch (const Error&) {
    return 0;
  }
  // The canonical spec of what was built must build to the same spec.
  if (nn::build_module(spec, nn::BuildOptions().max_bytes(fuzz::kBuildBudget))->spec() != spec) std::abort();
  return 0;
}
