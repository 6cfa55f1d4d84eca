// The words a rank prints before it aborts the job, and where its timeout
// comes from.
#include <gtest/gtest.h>

#include <cstdlib>

#include "convkit/core/error.h"
#include "dist/failure_report.h"
#include "dist/timeout_setting.h"

namespace convkit::dist {
namespace {

TEST(DistReport, NamesTheRankThatNeverReachedIt) {
  const StalledCollective stalled{0, "allreduce_sum #57 (float32 [1234])", 57, false, 30};
  EXPECT_EQ(timeout_report(stalled, {{1, 56, false}}),
            "convkit: rank 0: allreduce_sum #57 (float32 [1234]) did not complete within 30 s: rank 1 never "
            "reached it (its last was #56); aborting the job");
}

TEST(DistReport, NamesEveryMissingRankAndOnlyThose) {
  // Rank 1 hangs: rank 2 (not root) names it, and not rank 0 or 3, which got there.
  const StalledCollective stalled{2, "broadcast #3 from rank 1 (float64 [10])", 3, false, 2.5};
  const std::string line = timeout_report(stalled, {{0, 3, false}, {1, 0, false}, {3, 2, false}});
  EXPECT_EQ(line,
            "convkit: rank 2: broadcast #3 from rank 1 (float64 [10]) did not complete within 2.5 s: rank 1 never "
            "reached it (it reached none), rank 3 never reached it (its last was #2); aborting the job");
}

TEST(DistReport, EveryRankThereMeansOneDiedInside) {
  const StalledCollective stalled{1, "barrier #9", 9, false, 30};
  const std::string line = timeout_report(stalled, {{0, 9, false}});
  EXPECT_NE(line.find("every rank reached it (0), so a rank died or stalled inside it; aborting the job"),
            std::string::npos)
      << line;
}

TEST(DistReport, EndOfJobCountsOnlyRanksThatLeft) {
  const StalledCollective stalled{0, "the end of the job (after #4)", 5, true, 30};
  const std::string line = timeout_report(stalled, {{1, 4, false}, {2, 4, true}});
  EXPECT_EQ(line,
            "convkit: rank 0: the end of the job (after #4) did not complete within 30 s: rank 1 never reached it "
            "(its last was #4); aborting the job");
}

TEST(DistReport, DepartedPeer) {
  const StalledCollective stalled{0, "allreduce_sum #57 (float32 [4])", 57, false, 30};
  EXPECT_EQ(departed_peer_report(stalled, {1, 56, true}),
            "convkit: rank 0: allreduce_sum #57 (float32 [4]) cannot complete: rank 1 left the job after #56 (every "
            "rank must issue the same collectives); aborting the job");
}

class TimeoutEnv : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv(kTimeoutEnv); }
};

TEST_F(TimeoutEnv, OptionUnlessTheEnvironmentSays) {
  unsetenv(kTimeoutEnv);
  EXPECT_EQ(resolve_timeout_seconds({}), 300);
  EXPECT_EQ(resolve_timeout_seconds(ProcessGroupOptions().timeout(7)), 7);
  setenv(kTimeoutEnv, "3", 1);
  EXPECT_EQ(resolve_timeout_seconds(ProcessGroupOptions().timeout(7)), 3);
  setenv(kTimeoutEnv, "0.25", 1);
  EXPECT_EQ(resolve_timeout_seconds({}), 0.25);
}

TEST_F(TimeoutEnv, BadValuesAreNamed) {
  for (const char* bad : {"", "abc", "0", "-1", "inf", "nan", "3s", "1e999"}) {
    setenv(kTimeoutEnv, bad, 1);
    try {
      resolve_timeout_seconds({});
      ADD_FAILURE() << "accepted CONVKIT_DIST_TIMEOUT=\"" << bad << "\"";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("CONVKIT_DIST_TIMEOUT=\"") + bad + "\""), std::string::npos)
          << e.what();
    }
  }
  unsetenv(kTimeoutEnv);
  EXPECT_THROW(resolve_timeout_seconds(ProcessGroupOptions().timeout(0)), Error);
  EXPECT_THROW(resolve_timeout_seconds(ProcessGroupOptions().timeout(-5)), Error);
}

}  // namespace
}  // namespace convkit::dist
