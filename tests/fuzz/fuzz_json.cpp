// libFuzzer: the JSON reader behind safetensors headers on arbitrary text.
#include <string_view>

#include "convkit/core/error.h"
#include "io/json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    convkit::io::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const convkit::Error&) {
  }
  return 0;
}
