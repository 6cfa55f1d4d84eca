#pragma once
// Helpers shared by the test areas: random inputs, float64 references,
// non-contiguous views, and the list of devices every op is checked on.
#include <gtest/gtest.h>

#include <convkit/convkit.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace convkit::testing {

// The seed for a test's random shapes and values; fixed so failures reproduce.
constexpr std::uint64_t kSeed = 20261122;

// The devices op tests run on, from the registry: always cpu; cuda when usable;
// sim when CONVKIT_TEST_SIM=1. ctest runs the device suites once on cpu (and
// cuda) and again on sim, the op suites under three thread schedules
// (tests/CMakeLists.txt). CONVKIT_TEST_REQUIRE_CUDA=1 makes a binary exit at
// once, saying why, when cuda is not usable.
std::vector<Device> test_devices();
// The check behind CONVKIT_TEST_REQUIRE_CUDA, for other device lists.
void exit_unless_cuda_when_required();

// Readable gtest parameter names for devices: cpu, sim, cuda0.
std::string device_name(const ::testing::TestParamInfo<Device>& info);

// Uniform values in [lo, hi) from a std::mt19937_64, independent of convkit's RNG.
Tensor random_tensor(const Shape& shape, std::mt19937_64& rng, TensorOptions opts = {},
                     double lo = -1, double hi = 1);
// Same values as `t`, laid out with a gap after every element of the last dim,
// so the result is a non-contiguous view.
Tensor noncontiguous(const Tensor& t);
// A random shape of `rank` dims with sizes in [1, max_size].
Shape random_shape(std::mt19937_64& rng, int rank, std::int64_t max_size = 5);

// Row-major multi-index <-> flat index helpers for references.
std::vector<std::int64_t> unravel(std::int64_t flat, const Shape& shape);
// Flat index into `shape` of the element broadcast to multi-index `idx` of a larger shape.
std::int64_t broadcast_index(const std::vector<std::int64_t>& idx, const Shape& shape);

// Element-by-element comparison with a float64 reference.
::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& want,
                                     double atol, double rtol);
::testing::AssertionResult all_close(const Tensor& got, const std::vector<double>& want,
                                     double atol, double rtol);

// gradcheck in float64 with the default tolerances, as a gtest assertion.
::testing::AssertionResult grad_ok(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                   const std::vector<Tensor>& inputs,
                                   autograd::GradcheckOptions opts = {});

// Runs f and checks that it throws convkit::Error whose message holds every one of `parts`.
template <typename F>
::testing::AssertionResult throws_with(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts)
      if (msg.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message \"" << msg << "\" lacks \"" << p << "\"";
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no convkit::Error thrown";
}

}  // namespace convkit::testing
