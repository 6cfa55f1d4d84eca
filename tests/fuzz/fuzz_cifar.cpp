// libFuzzer: a CIFAR-10 batch file (plain or gzipped) from arbitrary bytes.
#include "convkit/core/error.h"
#include "convkit/data/cifar.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const convkit::data::CIFAR10 batch({convkit::fuzz::as_file(data, size)});
    if (batch.size() > 0) batch.get(batch.size() - 1);
  } catch (const convkit::Error&) {
  }
  return 0;
}
