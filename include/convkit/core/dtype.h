#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

namespace convkit {

// float32 is the working type; float64 exists for references and gradcheck;
// int64 holds indices and labels. half and bfloat16 get their own entries later.
enum class DType : std::uint8_t { float32, float64, int64 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int64: return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int64: return "int64";
  }
  return "?";
}

constexpr bool is_floating(DType t) { return t == DType::float32 || t == DType::float64; }

inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::float64; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::int64; };

}  // namespace convkit
