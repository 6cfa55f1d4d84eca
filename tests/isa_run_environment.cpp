// Linked into the suites that convkit_add_isa_runs runs again per forced ISA
// (tests/CMakeLists.txt). A forced run of the level this CPU would choose
// anyway repeats the suite's plain run instruction for instruction, so under
// CONVKIT_TEST_SKIP_DEFAULT_ISA=1 (set by those runs alone) it skips, saying
// why, and ctest reports it skipped. Forcing by hand, without that variable,
// runs every test as asked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <string>

#include "cpu/cpu_isa.h"

namespace convkit {
namespace {

class SkipDefaultIsa : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* skip = std::getenv("CONVKIT_TEST_SKIP_DEFAULT_ISA");
    const char* forced = std::getenv("CONVKIT_CPU_ISA");
    if (skip == nullptr || std::string(skip) != "1" || forced == nullptr) return;
    cpu::CpuIsa isa{};
    try {
      isa = cpu::parse_cpu_isa(forced);
    } catch (const std::exception&) {
      return;  // the backend refuses it at first use, naming the choices
    }
    const cpu::CpuIsa best = cpu::best_cpu_isa();
    if (isa == best)
      GTEST_SKIP() << "CONVKIT_CPU_ISA=" << forced << " is this CPU's best ISA, which the suite's plain run tests";
  }
};

[[maybe_unused]] const auto* const registered = ::testing::AddGlobalTestEnvironment(new SkipDefaultIsa);

}  // namespace
}  // namespace convkit
