// libFuzzer: read_idx on arbitrary bytes (plain or gzipped). A convkit::Error
// is the expected answer to a bad file; anything else is a finding.
#include "convkit/core/error.h"
#include "convkit/data/idx.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    convkit::data::read_idx(convkit::fuzz::as_file(data, size));
  } catch (const convkit::Error&) {
  }
  return 0;
}
