// The one-rank group, the argument checks every group shares, and
// launched_by_mpi(). The MPI group runs under mpirun (mpi_check.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

#include "convkit/core/error.h"
#include "convkit/dist/process_group.h"
#include "convkit/ops/factory.h"
#include "dist/single_group.h"

namespace convkit::dist {
namespace {

// Sets (or, with nullopt, removes) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Dist, LaunchedByMpiReadsEachLaunchersVariable) {
  ScopedEnv a("OMPI_COMM_WORLD_SIZE", std::nullopt), b("PMI_SIZE", std::nullopt), c("PMIX_RANK", std::nullopt);
  EXPECT_FALSE(launched_by_mpi());
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    ScopedEnv set(name, "2");
    EXPECT_TRUE(launched_by_mpi()) << name;
  }
  EXPECT_FALSE(launched_by_mpi());
}

TEST(Dist, WorldOutsideMpiIsOneRank) {
  ASSERT_FALSE(launched_by_mpi()) << "run this suite without mpirun";
  auto group = world();
  EXPECT_EQ(group->rank(), 0);
  EXPECT_EQ(group->size(), 1);
  EXPECT_EQ(group->backend(), "single");
  EXPECT_EQ(world(ProcessGroupOptions().timeout(5)).get(), group.get()) << "later calls return the first group";
  group->barrier();
}

TEST(Dist, SingleGroupCollectivesLeaveTheTensor) {
  auto group = make_single_group();
  for (DType dtype : {DType::float32, DType::float64}) {
    Tensor t = arange(5, dtype);
    group->allreduce_sum(t)->wait();
    group->broadcast(t, 0)->wait();
    for (int i = 0; i < 5; ++i) EXPECT_EQ(t.select(0, i).item(), i);
  }
  group->allreduce_sum(zeros({0, 3}))->wait();  // empty is fine, whatever core says of its strides
  group->broadcast(zeros({3, 0}), 0)->wait();
}

TEST(Dist, BadTensorsAreRefusedNamingTheProblem) {
  auto group = make_single_group();
  const std::string dtype = error_of([&] { group->allreduce_sum(zeros({2, 3}, DType::int64)); });
  EXPECT_NE(dtype.find("allreduce_sum"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("int64 [2, 3]"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("float32 or float64"), std::string::npos) << dtype;

  const std::string strided = error_of([&] { group->broadcast(zeros({2, 3}).transpose(0, 1), 0); });
  EXPECT_NE(strided.find("broadcast"), std::string::npos) << strided;
  EXPECT_NE(strided.find("float32 [3, 2]"), std::string::npos) << strided;
  EXPECT_NE(strided.find("contiguous"), std::string::npos) << strided;

  const std::string device = error_of([&] { group->allreduce_sum(zeros({4}, Device("sim"))); });
  EXPECT_NE(device.find("is on sim"), std::string::npos) << device;

  const std::string undefined = error_of([&] { group->allreduce_sum(Tensor()); });
  EXPECT_NE(undefined.find("undefined"), std::string::npos) << undefined;

  const std::string root = error_of([&] { group->broadcast(zeros({4}), 1); });
  EXPECT_NE(root.find("root 1 is not a rank"), std::string::npos) << root;
  EXPECT_NE(root.find("0..0"), std::string::npos) << root;
}

}  // namespace
}  // namespace convkit::dist
