#pragma once
// Small helpers shared by the sim tests.
//
// Every sim test is parameterized and instantiated with the prefix "sim", so
// its full name reads sim/Suite.Test/parameter and `ctest -R sim` selects them
// all. Tests that launch kernels run under each schedule in kSchedules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "convkit/core/error.h"
#include "convkit/sim/runtime.h"
#include "convkit/sim/schedule.h"

namespace sim_test {

// Seed for random inputs, fixed so failures reproduce. (The sim tests test the
// runtime alone and do not use tests/support, which pulls in the whole library.)
constexpr std::uint64_t kSeed = 20261122;

// The schedules every test that launches kernels runs under.
inline const char* const kSchedules[] = {"forward", "reverse", "random:1", "random:20261122"};

// "random:1" -> "random_1": gtest parameter names allow only [A-Za-z0-9_].
inline std::string schedule_test_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (c == ':') c = '_';
  }
  return name;
}

// Runs `f`, which must throw convkit::Error, and returns the message ("" and a
// test failure if it does not throw).
template <typename F>
std::string error_message(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const convkit::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a convkit::Error";
  return "";
}

// Fixture for tests parameterized by a schedule string; sets it for the test.
class WithSchedule : public ::testing::TestWithParam<const char*> {
 protected:
  WithSchedule() : schedule_(convkit::sim::Schedule::parse(GetParam())) {}

 private:
  convkit::sim::ScopedSchedule schedule_;
};

// Device memory as the sim backend allocates it: guarded while a check or the
// profile is on, zero-filled.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : p_(static_cast<T*>(convkit::sim::global_allocate(n * sizeof(T)))) {
    std::fill(p_, p_ + n, T{});
  }
  ~DeviceBuffer() { convkit::sim::global_free(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return p_; }
  T& operator[](std::size_t i) const { return p_[i]; }

 private:
  T* p_;
};

}  // namespace sim_test
