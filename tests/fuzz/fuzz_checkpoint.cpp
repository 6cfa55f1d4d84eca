// libFuzzer: load_checkpoint on arbitrary bytes, then what predict and
// resume do with a checkpoint that loads: build the model (under a small
// budget) and the optimizer. What loads must save and load back identically.
#include <filesystem>

#include "convkit/core/error.h"
#include "convkit/io/checkpoint.h"
#include "convkit/nn/module.h"
#include "convkit/optim/optimizer.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_roundtrip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace convkit;
  const std::string path = fuzz::as_file(data, size);
  io::Checkpoint ck;
  try {
    ck = io::load_checkpoint(path);
  } catch (const Error&) {
    return 0;
  }
  // The saver refusing what the loader accepted is a finding: no catch.
  const std::string copy = path + ".roundtrip";
  io::save_checkpoint(copy, ck);
  const io::Checkpoint again = io::load_checkpoint(copy);
  std::filesystem::remove(copy);
  if (again.model_spec != ck.model_spec || again.optimizer_spec != ck.optimizer_spec ||
      again.epoch != ck.epoch || again.step != ck.step || again.metadata != ck.metadata ||
      again.preprocessing != ck.preprocessing)
    std::abort();
  fuzz::require_same(ck.model_state, again.model_state);
  fuzz::require_same(ck.optimizer_state, again.optimizer_state);
  try {
    auto model = io::build_model(ck, nn::BuildOptions().max_bytes(fuzz::kBuildBudget));
    if (!ck.optimizer_spec.empty()) io::build_optimizer(ck, *model);
  } catch (const Error&) {
  }
  return 0;
}
