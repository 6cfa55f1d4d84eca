// A kernel family's version: set_kernel_version, the environment, and the
// per-thread ScopedKernelVersion that a tuned conv plan runs its passes
// under; tuning_versions, what benchmark mode times.
#include <memory>
#include <thread>

#include "convkit/backend/kernel_versions.h"
#include "support/support.h"

namespace convkit {
namespace {

// Three versions, default 2; no environment variable names it.
const std::string& test_family() {
  static const std::string name = [] {
    register_kernel_family({"test_scoped_family", 3, 2, "v1, v2, v3: a family for this test"});
    return std::string("test_scoped_family");
  }();
  return name;
}

struct VersionGuard {
  ~VersionGuard() { set_kernel_version(test_family(), 0); }
};

TEST(KernelVersions, AScopeRunsItsVersionOnItsThreadAheadOfTheProcessChoice) {
  VersionGuard guard;
  const std::string& f = test_family();
  set_kernel_version(f, 1);
  {
    const ScopedKernelVersion outer(f, 3);
    EXPECT_EQ(kernel_version(f), 3);
    EXPECT_TRUE(kernel_version_pinned(f));
    {
      const ScopedKernelVersion inner(f, 2);
      EXPECT_EQ(kernel_version(f), 2);
      int other_thread = 0;
      std::thread([&] { other_thread = kernel_version(f); }).join();
      EXPECT_EQ(other_thread, 1);  // the process's choice
    }
    EXPECT_EQ(kernel_version(f), 3);
    const ScopedKernelVersion nothing(f, 0);
    EXPECT_EQ(kernel_version(f), 3);
  }
  EXPECT_EQ(kernel_version(f), 1);
  set_kernel_version(f, 0);
  EXPECT_EQ(kernel_version(f), 2);
  EXPECT_FALSE(kernel_version_pinned(f));
}

TEST(KernelVersions, ScopesMayEndOutOfOrder) {
  const std::string& f = test_family();
  auto outer = std::make_unique<ScopedKernelVersion>(f, 3);
  auto inner = std::make_unique<ScopedKernelVersion>(f, 1);
  EXPECT_EQ(kernel_version(f), 1);
  outer.reset();
  EXPECT_EQ(kernel_version(f), 1);
  inner.reset();
  EXPECT_EQ(kernel_version(f), 2);
}

TEST(KernelVersions, AScopedVersionTheFamilyLacksIsAnErrorWhereItIsRead) {
  const std::string& f = test_family();
  const ScopedKernelVersion scope(f, 4);
  EXPECT_TRUE(testing::throws_with([&] { kernel_version(f); }, {"test_scoped_family has versions 1..3, got 4"}));
  EXPECT_TRUE(testing::throws_with([&] { ScopedKernelVersion bad(f, -1); }, {"version >= 1"}));
  EXPECT_TRUE(testing::throws_with([] { ScopedKernelVersion bad("", 2); }, {"needs a family"}));
}

TEST(KernelVersions, TuningTimesTheDefaultAndTheLaterVersionsUnlessTheFamilyIsPinned) {
  VersionGuard guard;
  const std::string& f = test_family();
  EXPECT_EQ(tuning_versions(f), (std::vector<int>{2, 3}));
  set_kernel_version(f, 1);
  EXPECT_TRUE(tuning_versions(f).empty());
  set_kernel_version(f, 0);
  EXPECT_TRUE(testing::throws_with([] { tuning_versions("no_such_family"); }, {"unknown kernel family 'no_such_family'"}));
}

}  // namespace
}  // namespace convkit
