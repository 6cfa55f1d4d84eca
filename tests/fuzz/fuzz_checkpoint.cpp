// libFuzzer: load_checkpoint on arbitrary bytes, then what predict and
// resume do with a checkpoint that loads: build the model (under a small
// budget) and the optimizer.
#include "convkit/core/error.h"
#include "convkit/io/checkpoint.h"
#include "convkit/nn/module.h"
#include "convkit/optim/optimizer.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace convkit;
  try {
    const io::Checkpoint ck = io::load_checkpoint(fuzz::as_file(data, size));
    auto model = io::build_model(ck, nn::BuildOptions().max_bytes(fuzz::kBuildBudget));
    if (!ck.optimizer_spec.empty()) io::build_optimizer(ck, *model);
  } catch (const Error&) {
  }
  return 0;
}
