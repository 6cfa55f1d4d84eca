// The cpu backend's ISA dispatch (src/cpu/cpu_isa.h): parsing
// CONVKIT_CPU_ISA, detection, forcing a level, refusing one the CPU lacks,
// and which copy this process runs. The conv and layer suites run again
// under each forced level (tests/CMakeLists.txt, convkit_add_isa_runs).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/wait.h>

#include "convkit/backend/backend.h"
#include "cpu/conv/tap_gemm.h"
#include "cpu/cpu_isa.h"
#include "cpu/isa_dispatch.h"
#include "support/support.h"

namespace convkit {
namespace {

using cpu::CpuIsa;

TEST(CpuIsa, ParsesEachLevelAndNamesTheChoicesOtherwise) {
  EXPECT_EQ(cpu::parse_cpu_isa("baseline"), CpuIsa::baseline);
  EXPECT_EQ(cpu::parse_cpu_isa("avx2"), CpuIsa::avx2);
  EXPECT_EQ(cpu::parse_cpu_isa("avx512"), CpuIsa::avx512);
  for (const char* bad : {"AVX2", "sse2", "avx", "native", " avx2", "avx512f"}) {
    EXPECT_TRUE(testing::throws_with([&] { cpu::parse_cpu_isa(bad); },
                                     {"CONVKIT_CPU_ISA", bad, "baseline, avx2, avx512"}))
        << bad;
  }
  for (CpuIsa isa : {CpuIsa::baseline, CpuIsa::avx2, CpuIsa::avx512})
    EXPECT_EQ(cpu::parse_cpu_isa(cpu::cpu_isa_name(isa)), isa);
}

TEST(CpuIsa, UnsetOrEmptyTakesTheDetectedLevel) {
  for (CpuIsa best : {CpuIsa::baseline, CpuIsa::avx2, CpuIsa::avx512}) {
    for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
      const cpu::CpuIsaChoice choice = cpu::choose_cpu_isa(unset, best);
      EXPECT_EQ(choice.isa, best);
      EXPECT_FALSE(choice.forced);
      EXPECT_EQ(cpu::describe(choice), std::string(cpu::cpu_isa_name(best)) + " (detected)");
    }
  }
}

TEST(CpuIsa, ForcesAnyLevelUpToTheCpusBest) {
  const cpu::CpuIsaChoice choice = cpu::choose_cpu_isa("baseline", CpuIsa::avx512);
  EXPECT_EQ(choice.isa, CpuIsa::baseline);
  EXPECT_TRUE(choice.forced);
  EXPECT_EQ(cpu::describe(choice), "baseline (forced by CONVKIT_CPU_ISA; this CPU's best is avx512)");
  EXPECT_EQ(cpu::choose_cpu_isa("avx2", CpuIsa::avx2).isa, CpuIsa::avx2);
  EXPECT_EQ(cpu::choose_cpu_isa("avx512", CpuIsa::avx512).isa, CpuIsa::avx512);
}

// A level above the CPU's would stop at its first instruction (SIGILL):
// refused with the CPU's best named instead.
TEST(CpuIsa, RefusesALevelTheCpuLacks) {
  EXPECT_TRUE(testing::throws_with([] { cpu::choose_cpu_isa("avx512", CpuIsa::avx2); },
                                   {"CONVKIT_CPU_ISA=avx512", "best ISA is avx2", "baseline, avx2)"}));
  EXPECT_TRUE(testing::throws_with([] { cpu::choose_cpu_isa("avx2", CpuIsa::baseline); },
                                   {"CONVKIT_CPU_ISA=avx2", "best ISA is baseline"}));
  EXPECT_TRUE(testing::throws_with([] { cpu::choose_cpu_isa("avx512", CpuIsa::baseline); },
                                   {"best ISA is baseline"}));
  EXPECT_TRUE(testing::throws_with([] { cpu::choose_cpu_isa("sse4", CpuIsa::avx512); }, {"unknown ISA 'sse4'"}));
  // And on this machine: every level above its best is refused.
  const CpuIsa best = cpu::best_cpu_isa();
  for (CpuIsa isa : {CpuIsa::avx2, CpuIsa::avx512}) {
    if (isa <= best) continue;
    EXPECT_TRUE(testing::throws_with([&] { cpu::choose_cpu_isa(cpu::cpu_isa_name(isa), best); },
                                     {std::string("best ISA is ") + cpu::cpu_isa_name(best)}));
  }
}

// This process runs the copy CONVKIT_CPU_ISA (or detection) chose, and the
// cpu device says which and why.
TEST(CpuIsa, TheProcessRunsTheChosenCopy) {
  const char* forced = std::getenv("CONVKIT_CPU_ISA");
  const cpu::CpuIsaChoice& choice = cpu::selected_cpu_isa();
  EXPECT_EQ(choice.forced, forced != nullptr && *forced != '\0');
  if (choice.forced) {
    EXPECT_STREQ(cpu::cpu_isa_name(choice.isa), forced);
  }
  EXPECT_EQ(choice.best, cpu::best_cpu_isa());
  EXPECT_EQ(cpu::tap_gemm_compiled(), choice.isa != CpuIsa::baseline);
  const std::vector<BackendInfo> devices = backend_for(Device(DeviceType::cpu)).devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_NE(devices[0].detail.find("kernels " + cpu::describe(choice)), std::string::npos) << devices[0].detail;
}

// Each copy is built for its level: the tap kernels exist from AVX2 up.
TEST(CpuIsa, EachCopyHasItsLevelsKernels) {
  EXPECT_FALSE(cpu::isa_baseline::tap_gemm_compiled());
#if defined(__x86_64__)
  EXPECT_TRUE(cpu::isa_avx2::tap_gemm_compiled());
  EXPECT_TRUE(cpu::isa_avx512::tap_gemm_compiled());
#endif
}

#ifdef CONVKIT_CLI_PATH
// `convkit devices` under a forced level: the path it runs, or the refusal,
// never a crash on an unknown instruction.
std::string run_devices(const std::string& isa, int* status) {
  const std::string command = "CONVKIT_CPU_ISA=" + isa + " " + CONVKIT_CLI_PATH + " devices 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  std::array<char, 512> buffer{};
  while (pipe != nullptr && std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) out += buffer.data();
  *status = pipe != nullptr ? pclose(pipe) : -1;
  return out;
}

TEST(CpuIsa, DevicesShowsThePathOrTheRefusal) {
  const CpuIsa best = cpu::best_cpu_isa();
  for (CpuIsa isa : {CpuIsa::baseline, CpuIsa::avx2, CpuIsa::avx512}) {
    int status = 0;
    const std::string out = run_devices(cpu::cpu_isa_name(isa), &status);
    if (isa <= best) {
      EXPECT_EQ(status, 0) << out;
      EXPECT_NE(out.find(std::string("kernels ") + cpu::cpu_isa_name(isa) + " (forced by CONVKIT_CPU_ISA"),
                std::string::npos)
          << out;
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << out;
      EXPECT_NE(out.find(std::string("best ISA is ") + cpu::cpu_isa_name(best)), std::string::npos) << out;
    }
  }
  int status = 0;
  const std::string out = run_devices("pentium", &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << out;
  EXPECT_NE(out.find("choices: baseline, avx2, avx512"), std::string::npos) << out;
}
#endif

}  // namespace
}  // namespace convkit
