// The schedule: CONVKIT_SIM_SCHEDULE's syntax, setting it, reading it from the
// environment, and the order in which it actually runs a block's threads.
#include "convkit/sim/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "convkit/core/error.h"
#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using convkit::sim::Schedule;
using convkit::sim::ScheduleOrder;

// ---- text form

struct ScheduleCase {
  const char* text;
  Schedule expected;
};

class ScheduleText : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(ScheduleText, ParsesAndPrintsBack) {
  const Schedule parsed = Schedule::parse(GetParam().text);
  EXPECT_EQ(parsed, GetParam().expected);
  EXPECT_EQ(parsed.str(), GetParam().text);
}

TEST_P(ScheduleText, ScopedScheduleSetsItThenRestoresThePreviousOne) {
  const Schedule before = convkit::sim::current_schedule();
  {
    const convkit::sim::ScopedSchedule outer(GetParam().expected);
    EXPECT_EQ(convkit::sim::current_schedule(), GetParam().expected);
    {
      const convkit::sim::ScopedSchedule inner(Schedule{ScheduleOrder::random, 5});
      EXPECT_EQ(convkit::sim::current_schedule(), (Schedule{ScheduleOrder::random, 5}));
    }
    EXPECT_EQ(convkit::sim::current_schedule(), GetParam().expected);
  }
  EXPECT_EQ(convkit::sim::current_schedule(), before);
}

INSTANTIATE_TEST_SUITE_P(sim, ScheduleText,
                         ::testing::Values(ScheduleCase{"forward", {ScheduleOrder::forward, 0}},
                                           ScheduleCase{"reverse", {ScheduleOrder::reverse, 0}},
                                           ScheduleCase{"random:0", {ScheduleOrder::random, 0}},
                                           ScheduleCase{"random:42", {ScheduleOrder::random, 42}},
                                           ScheduleCase{
                                               "random:18446744073709551615",
                                               {ScheduleOrder::random, 18446744073709551615ull}}),
                         [](const ::testing::TestParamInfo<ScheduleCase>& info) {
                           std::string name = info.param.text;
                           std::replace(name.begin(), name.end(), ':', '_');
                           return name;
                         });

class BadScheduleText : public ::testing::TestWithParam<const char*> {};

TEST_P(BadScheduleText, IsRejectedNamingTheAcceptedForms) {
  const std::string message = sim_test::error_message([] { Schedule::parse(GetParam()); });
  EXPECT_NE(message.find("forward, reverse or random:SEED"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(sim, BadScheduleText,
                         ::testing::Values("", "Forward", "random", "random:", "random:x",
                                           "random:-1", "random:1x", "random:99999999999999999999",
                                           "backward"));

// ---- the environment variable. It is read once, on first use, so these run
// in a fresh process: the "threadsafe" death-test style re-executes the test
// binary, which inherits the variable set here.

class ScheduleEnvironmentDeathTest : public ::testing::TestWithParam<const char*> {
 protected:
  ScheduleEnvironmentDeathTest() {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    setenv("CONVKIT_SIM_SCHEDULE", GetParam(), 1);
  }
  ~ScheduleEnvironmentDeathTest() override { unsetenv("CONVKIT_SIM_SCHEDULE"); }
};

TEST_P(ScheduleEnvironmentDeathTest, VariableSetsTheDefaultSchedule) {
  EXPECT_EXIT(std::exit(convkit::sim::current_schedule() == Schedule::parse(GetParam()) ? 0 : 1),
              ::testing::ExitedWithCode(0), "");
}

INSTANTIATE_TEST_SUITE_P(sim, ScheduleEnvironmentDeathTest,
                         ::testing::ValuesIn(sim_test::kSchedules), sim_test::schedule_test_name);

class BadScheduleEnvironmentDeathTest : public ScheduleEnvironmentDeathTest {};

TEST_P(BadScheduleEnvironmentDeathTest, IsAnErrorNamingTheVariable) {
  EXPECT_EXIT(
      {
        try {
          convkit::sim::current_schedule();
        } catch (const convkit::Error& e) {
          std::fputs(e.what(), stderr);
          std::exit(3);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(3), "CONVKIT_SIM_SCHEDULE.*forward, reverse or random:SEED");
}

INSTANTIATE_TEST_SUITE_P(sim, BadScheduleEnvironmentDeathTest,
                         ::testing::Values("sideways", "random:"));

// ---- the order threads really run in

std::vector<unsigned> ascending(unsigned n) {
  std::vector<unsigned> v(n);
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

class ScheduleOrderOfThreads : public sim_test::WithSchedule {};

// A 64-thread block records the order in which its threads start, and the
// order in which they leave a __syncthreads.
TEST_P(ScheduleOrderOfThreads, FollowsTheSchedule) {
  constexpr unsigned n = 64;
  std::vector<unsigned> before(n), after(n);
  sim_test_kernels::record_order(n, before.data(), after.data());

  const Schedule schedule = convkit::sim::current_schedule();
  std::vector<unsigned> expected = ascending(n);
  switch (schedule.order) {
    case ScheduleOrder::forward:
      EXPECT_EQ(before, expected);
      EXPECT_EQ(after, expected);
      break;
    case ScheduleOrder::reverse:
      std::reverse(expected.begin(), expected.end());
      EXPECT_EQ(before, expected);
      EXPECT_EQ(after, expected);
      break;
    case ScheduleOrder::random: {
      EXPECT_TRUE(std::is_permutation(before.begin(), before.end(), expected.begin()));
      EXPECT_TRUE(std::is_permutation(after.begin(), after.end(), expected.begin()));
      EXPECT_NE(before, expected);
      EXPECT_NE(after, before);  // reshuffled at the barrier
      // The same seed repeats the run exactly; another seed does not.
      std::vector<unsigned> again_before(n), again_after(n);
      sim_test_kernels::record_order(n, again_before.data(), again_after.data());
      EXPECT_EQ(again_before, before);
      EXPECT_EQ(again_after, after);
      const convkit::sim::ScopedSchedule other_seed(
          Schedule{ScheduleOrder::random, schedule.seed + 1});
      sim_test_kernels::record_order(n, again_before.data(), again_after.data());
      EXPECT_NE(again_before, before);
      break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(sim, ScheduleOrderOfThreads, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

}  // namespace
