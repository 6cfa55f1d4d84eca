#include "convkit/core/device.h"

#include <charconv>

#include "convkit/core/error.h"

namespace convkit {

Device Device::parse(std::string_view text) {
  if (text == "cpu") return {DeviceType::cpu, 0};
  if (text == "sim") return {DeviceType::sim, 0};
  if (text == "cuda") return {DeviceType::cuda, 0};
  if (text.starts_with("cuda:")) {
    const auto digits = text.substr(5);
    int index = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0 && !digits.empty())
      return {DeviceType::cuda, index};
  }
  CK_FAIL("unknown device '", text, "': expected cpu, sim, cuda or cuda:N");
}

std::string Device::str() const {
  switch (type) {
    case DeviceType::cpu: return "cpu";
    case DeviceType::sim: return "sim";
    case DeviceType::cuda: return "cuda:" + std::to_string(index);
  }
  return "?";
}

}  // namespace convkit
