// Parsing and setting the schedule (CONVKIT_SIM_SCHEDULE's syntax).
#include "convkit/sim/schedule.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "convkit/core/error.h"
#include "sim_test_util.h"

namespace {

using convkit::sim::Schedule;
using convkit::sim::ScheduleOrder;

TEST(Schedule, ParsesTheThreeForms) {
  EXPECT_EQ(Schedule::parse("forward"), (Schedule{ScheduleOrder::forward, 0}));
  EXPECT_EQ(Schedule::parse("reverse"), (Schedule{ScheduleOrder::reverse, 0}));
  EXPECT_EQ(Schedule::parse("random:42"), (Schedule{ScheduleOrder::random, 42}));
  EXPECT_EQ(Schedule::parse("random:18446744073709551615").seed, 18446744073709551615ull);
}

TEST(Schedule, RoundTripsThroughText) {
  for (const char* text : {"forward", "reverse", "random:0", "random:123456789"}) {
    EXPECT_EQ(Schedule::parse(text).str(), text);
  }
}

TEST(Schedule, RejectsAnythingElseNamingTheForms) {
  for (const char* text :
       {"", "Forward", "random", "random:", "random:x", "random:-1", "random:1x", "backward"}) {
    const std::string message = sim_test::error_message([&] { Schedule::parse(text); });
    EXPECT_NE(message.find("forward, reverse or random:SEED"), std::string::npos) << message;
  }
}

TEST(Schedule, ScopedScheduleRestoresThePreviousOne) {
  const Schedule before = convkit::sim::current_schedule();
  {
    convkit::sim::ScopedSchedule outer(Schedule::parse("reverse"));
    EXPECT_EQ(convkit::sim::current_schedule(), Schedule::parse("reverse"));
    {
      convkit::sim::ScopedSchedule inner(Schedule::parse("random:5"));
      EXPECT_EQ(convkit::sim::current_schedule(), Schedule::parse("random:5"));
    }
    EXPECT_EQ(convkit::sim::current_schedule(), Schedule::parse("reverse"));
  }
  EXPECT_EQ(convkit::sim::current_schedule(), before);
}

// The environment variable is read once, on first use, so these run in a fresh
// process: the "threadsafe" death-test style re-executes the test binary, which
// inherits the variable set here.
class ScheduleEnvironmentDeathTest : public ::testing::Test {
 protected:
  ScheduleEnvironmentDeathTest() { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  ~ScheduleEnvironmentDeathTest() override { unsetenv("CONVKIT_SIM_SCHEDULE"); }
};

TEST_F(ScheduleEnvironmentDeathTest, VariableSetsTheDefaultSchedule) {
  setenv("CONVKIT_SIM_SCHEDULE", "random:99", 1);
  EXPECT_EXIT(std::exit(convkit::sim::current_schedule() == Schedule::parse("random:99") ? 0 : 1),
              ::testing::ExitedWithCode(0), "");
}

TEST_F(ScheduleEnvironmentDeathTest, BadValueIsAnErrorNamingTheVariable) {
  setenv("CONVKIT_SIM_SCHEDULE", "sideways", 1);
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
      ::testing::ExitedWithCode(3),
      "CONVKIT_SIM_SCHEDULE.*'sideways'.*forward, reverse or random:SEED");
}

}  // namespace
