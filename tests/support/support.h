#pragma once
// Helpers shared by the test areas.
#include <cstdint>
#include <random>

namespace convkit::testing {

// The seed for a test's random shapes and values; fixed so failures reproduce.
constexpr std::uint64_t kSeed = 20261122;

}  // namespace convkit::testing
