// libFuzzer: decode_image (libpng / libjpeg) on arbitrary bytes.
#include <vector>

#include "convkit/core/error.h"
#include "convkit/data/image_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    convkit::data::decode_image(std::vector<std::uint8_t>(data, data + size), "fuzz");
  } catch (const convkit::Error&) {
  }
  return 0;
}
