// libFuzzer: parse_safetensors on arbitrary bytes.
#include <vector>

#include "convkit/core/error.h"
#include "convkit/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    convkit::io::parse_safetensors(std::vector<std::uint8_t>(data, data + size), "fuzz");
  } catch (const convkit::Error&) {
  }
  return 0;
}
