// libFuzzer: parse_safetensors on arbitrary bytes; what parses must write
// and parse back identically.
#include <vector>

#include "convkit/core/error.h"
#include "convkit/io/safetensors.h"
#include "fuzz/fuzz_roundtrip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace convkit;
  io::SafetensorsFile file;
  try {
    file = io::parse_safetensors(std::vector<std::uint8_t>(data, data + size), "fuzz");
  } catch (const Error&) {
    return 0;
  }
  // No Error is caught from here on: the writer refusing what the reader
  // accepted is a finding.
  const io::SafetensorsFile again =
      io::parse_safetensors(io::safetensors_bytes(file.tensors, file.metadata), "fuzz round trip");
  fuzz::require_same(file.tensors, again.tensors);
  if (file.metadata != again.metadata) std::abort();
  return 0;
}
