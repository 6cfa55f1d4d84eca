#pragma once
#include <ostream>
#include <string>
#include <string_view>

namespace convkit {

// cpu: OpenMP + Eigen. sim: the CUDA kernels compiled by g++ and run on the
// CPU. cuda:N: the same kernels on GPU N.
enum class DeviceType { cpu, sim, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}
  // Parses "cpu", "sim", "cuda" or "cuda:N"; throws Error otherwise.
  static Device parse(std::string_view text);
  Device(const char* text) : Device(parse(text)) {}  // NOLINT: "cuda:0" reads naturally
  Device(const std::string& text) : Device(parse(text)) {}  // NOLINT

  std::string str() const;
  friend constexpr bool operator==(const Device&, const Device&) = default;
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

inline constexpr Device kCPU{DeviceType::cpu, 0};
inline constexpr Device kSim{DeviceType::sim, 0};

}  // namespace convkit
