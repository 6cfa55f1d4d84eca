// The device group on sim: the sim backend's communicator (NCCL's calls
// emulated between thread-ranks of this process), the group over it with a
// thread group as its bootstrap, DistributedDataParallel's buckets on the
// device, and the timeout that ends the job (through end_job's test seam).
#include <atomic>
#include <thread>

#include <convkit/dist/device_group.h>
#include <convkit/dist/distributed_data_parallel.h>

#include "device_group_checks.h"
#include "dist/end_job.h"
#include "fake_groups.h"
#include "support/support.h"

namespace convkit::testing {
namespace {

// Runs fn(rank) on `size` threads; rethrows the first error.
void on_threads(int size, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void wait_until_completed(DeviceCommunicator& comm, std::int64_t number) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!comm.completed(number)) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "collective #" << number << " never completed";
    std::this_thread::yield();
  }
}

std::vector<double> values_of(const Tensor& t) { return t.to(kCPU).to(DType::float64).to_vector<double>(); }

TEST(SimCommunicator, SumsInRankOrderAndBroadcastsFromAnyRoot) {
  CONVKIT_SKIP_SIM_THREAD_RANKS_IF_UNSUPPORTED();
  Backend& sim = backend_for(kSim);
  ASSERT_TRUE(sim.communicator_support().ok) << sim.communicator_support().detail;
  const CommunicatorId id = sim.make_communicator_id();
  const int ranks = 3;
  std::vector<std::vector<double>> sums(ranks), broadcasts(ranks);
  std::vector<std::int64_t> numbers(static_cast<std::size_t>(3 * ranks));
  on_threads(ranks, [&](int r) {
    auto comm = sim.make_communicator(id, r, ranks, kSim, 10);
    EXPECT_EQ(comm->library(), "sim");
    EXPECT_EQ(comm->rank(), r);
    EXPECT_EQ(comm->size(), ranks);
    const Tensor s = (arange(0, 5, 1, kSim) + 10.0 * r).contiguous();
    const Tensor b = full({3}, r, TensorOptions().device(kSim).dtype(DType::float64));
    const auto n1 = comm->allreduce_sum(s);
    const auto n2 = comm->broadcast(b, 2);
    const auto n3 = comm->allreduce_sum(empty({0}, kSim));
    wait_until_completed(*comm, n3);
    numbers[static_cast<std::size_t>(3 * r)] = n1;
    numbers[static_cast<std::size_t>(3 * r + 1)] = n2;
    numbers[static_cast<std::size_t>(3 * r + 2)] = n3;
    sums[static_cast<std::size_t>(r)] = values_of(s);
    broadcasts[static_cast<std::size_t>(r)] = values_of(b);
  });
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(sums[static_cast<std::size_t>(r)], (std::vector<double>{30, 33, 36, 39, 42})) << "rank " << r;
    EXPECT_EQ(broadcasts[static_cast<std::size_t>(r)], (std::vector<double>{2, 2, 2})) << "rank " << r;
    for (int k = 0; k < 3; ++k) EXPECT_EQ(numbers[static_cast<std::size_t>(3 * r + k)], k + 1);
  }
}

TEST(SimCommunicator, RefusesWrongTensorsWithoutTakingANumber) {
  Backend& sim = backend_for(kSim);
  auto comm = sim.make_communicator(sim.make_communicator_id(), 0, 1, kSim, 10);
  EXPECT_TRUE(throws_with([&] { comm->allreduce_sum(ones({4})); },
                          {"allreduce_sum", "float32 [4]", "is on cpu", "tensors on sim only"}));
  EXPECT_TRUE(throws_with([&] { comm->allreduce_sum(zeros({2}, TensorOptions().device(kSim).dtype(DType::int64))); },
                          {"int64 [2]", "must be float32 or float64"}));
  EXPECT_TRUE(throws_with([&] { comm->broadcast(zeros({3, 4}, kSim).transpose(0, 1), 0); },
                          {"broadcast", "must be contiguous"}));
  EXPECT_TRUE(throws_with([&] { comm->broadcast(zeros({3}, kSim), 1); }, {"root 1 is not a rank", "ranks 0..0"}));
  EXPECT_TRUE(throws_with([&] { comm->allreduce_sum(Tensor()); }, {"undefined"}));
  EXPECT_EQ(comm->allreduce_sum(zeros({3}, kSim)), 1);
  EXPECT_TRUE(comm->completed(1));
}

TEST(SimCommunicator, RanksThatDisagreeFailTheCollective) {
  CONVKIT_SKIP_SIM_THREAD_RANKS_IF_UNSUPPORTED();
  Backend& sim = backend_for(kSim);
  const CommunicatorId id = sim.make_communicator_id();
  std::vector<std::string> errors(2);
  on_threads(2, [&](int r) {
    auto comm = sim.make_communicator(id, r, 2, kSim, 10);
    const Tensor t = zeros({4}, kSim);
    const auto n = r == 0 ? comm->allreduce_sum(t) : comm->broadcast(t, 0);
    try {
      wait_until_completed(*comm, n);
    } catch (const Error& e) {
      errors[static_cast<std::size_t>(r)] = e.what();
    }
  });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("collective #1 differs between ranks"), std::string::npos) << e;
    EXPECT_NE(e.find("allreduce_sum (float32, 4 elements)"), std::string::npos) << e;
    EXPECT_NE(e.find("broadcast from rank 0"), std::string::npos) << e;
  }
}

TEST(SimCommunicator, NamesTheRanksThatNeverJoined) {
  Backend& sim = backend_for(kSim);
  EXPECT_TRUE(throws_with([&] { sim.make_communicator(sim.make_communicator_id(), 0, 3, kSim, 0.2); },
                          {"rank 1, 2 of 3 did not join within 0.2 s"}));
}

TEST(SimCommunicator, RefusesIdsItDidNotMake) {
  Backend& sim = backend_for(kSim);
  CommunicatorId foreign = sim.make_communicator_id();
  foreign[4] ^= 0xff;  // the making process's id
  EXPECT_TRUE(throws_with([&] { sim.make_communicator(foreign, 0, 1, kSim, 1); },
                          {"thread-ranks of one process", "MPI group"}));
  CommunicatorId junk{};
  EXPECT_TRUE(throws_with([&] { sim.make_communicator(junk, 0, 1, kSim, 1); }, {"not made by the sim backend"}));
  EXPECT_TRUE(throws_with([&] { sim.make_communicator(sim.make_communicator_id(), 1, 1, kSim, 1); },
                          {"rank 1 of 1 is not a rank"}));
}

TEST(DeviceGroup, CpuAndItsBackendHaveNone) {
  std::string why;
  EXPECT_FALSE(dist::device_group_available(kCPU, &why));
  EXPECT_NE(why.find("travel over MPI"), std::string::npos) << why;
  EXPECT_TRUE(dist::device_group_available(kSim));
  EXPECT_TRUE(throws_with([] { dist::device_group(kCPU, dist::world()); }, {"device_group(cpu)", "over MPI"}));
  EXPECT_TRUE(throws_with([] { dist::device_group(kSim, nullptr); }, {"bootstrap group is null"}));
}

TEST(DeviceGroup, OneRankOverTheSingleGroup) {
  auto group = dist::device_group(kSim, dist::world());
  EXPECT_EQ(group->backend(), "sim");
  EXPECT_EQ(group->device(), kSim);
  EXPECT_EQ(group->rank(), 0);
  EXPECT_EQ(group->size(), 1);
  EXPECT_EQ(one_rank_collectives_problem(group), "");
  EXPECT_TRUE(throws_with([&] { group->broadcast(zeros({2}, kSim), -1); }, {"root -1 is not a rank"}));
  EXPECT_TRUE(throws_with([&] { group->allreduce_sum(zeros({2}, TensorOptions().device(kSim).dtype(DType::int64))); },
                          {"allreduce_sum", "int64 [2]", "float32 or float64"}));
}

TEST(DeviceGroup, FourThreadRanksSumBroadcastAndMeetAtBarriers) {
  CONVKIT_SKIP_SIM_THREAD_RANKS_IF_UNSUPPORTED();
  const int ranks = 4;
  ThreadGroups bootstrap(ranks);
  std::vector<std::vector<double>> got(ranks);
  bootstrap.run([&](int r) {
    auto group = dist::device_group(kSim, bootstrap.group(r));
    ASSERT_EQ(group->rank(), r);
    ASSERT_EQ(group->size(), ranks);
    // Several in flight, waited in reverse order.
    std::vector<Tensor> t;
    std::vector<std::shared_ptr<dist::Work>> w;
    for (int k = 0; k < 3; ++k) {
      t.push_back(full({2}, 10 * k + r, kSim));
      w.push_back(group->allreduce_sum(t.back()));
    }
    const Tensor from_root = full({3}, r, TensorOptions().device(kSim).dtype(DType::float64));
    w.push_back(group->broadcast(from_root, 3));
    for (auto it = w.rbegin(); it != w.rend(); ++it) (*it)->wait();
    group->barrier();
    std::vector<double>& mine = got[static_cast<std::size_t>(r)];
    for (const Tensor& x : t) mine.push_back(values_of(x)[0]);
    mine.push_back(values_of(from_root)[2]);
  });
  EXPECT_FALSE(bootstrap.mismatched());
  for (int r = 0; r < ranks; ++r)  // 0+1+2+3 = 6, 10+11+12+13 = 46, ...; the root's 3
    EXPECT_EQ(got[static_cast<std::size_t>(r)], (std::vector<double>{6, 46, 86, 3})) << "rank " << r;
}

TEST(DeviceGroup, BucketsStayOnTheDeviceAndMatchPlainTrainingOnOneRank) {
  EXPECT_EQ(one_rank_reducer_difference(dist::device_group(kSim, dist::world())), 0.0);
}

// N thread-ranks with batch B / N each, their gradients over a sim device
// group, train as one rank with batch B.
void expect_device_group_ranks_match_one_rank(int ranks) {
  const auto batches = batches_on(training_batches(4, 8), kSim);
  auto reference = small_conv_net(7, false);
  reference->to(kSim);
  train_sgd(*reference, batches);

  ThreadGroups bootstrap(ranks);
  std::vector<std::shared_ptr<nn::Sequential>> models;
  for (int r = 0; r < ranks; ++r) {
    // Different seeds: the broadcast at construction must make them equal.
    models.push_back(small_conv_net(r == 0 ? 7 : 100 + static_cast<std::uint64_t>(r), false));
    models.back()->to(kSim);
  }
  std::vector<std::string> backends(static_cast<std::size_t>(ranks));
  bootstrap.run([&](int rank) {
    auto group = dist::device_group(kSim, bootstrap.group(rank));
    backends[static_cast<std::size_t>(rank)] = group->backend();
    dist::DistributedDataParallel ddp(models[static_cast<std::size_t>(rank)], group,
                                      dist::DistributedDataParallelOptions().bucket_cap_mb(50 * 4.0 / (1 << 20)));
    EXPECT_GT(ddp.bucket_parameter_names().size(), 1u);
    std::vector<Batch> mine;
    for (const Batch& b : batches) mine.push_back(shard(b, rank, ranks));
    train_sgd(ddp, mine);
  });
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(backends[static_cast<std::size_t>(r)], "sim");
    EXPECT_LT(max_state_difference(*models[static_cast<std::size_t>(r)], *reference), 1e-5) << "rank " << r;
  }
}

TEST(DeviceGroup, DdpOnTwoThreadRanksMatchesOneRankWithTheWholeBatch) {
  CONVKIT_SKIP_SIM_THREAD_RANKS_IF_UNSUPPORTED();
  expect_device_group_ranks_match_one_rank(2);
}
TEST(DeviceGroup, DdpOnFourThreadRanksMatchesOneRankWithTheWholeBatch) {
  CONVKIT_SKIP_SIM_THREAD_RANKS_IF_UNSUPPORTED();
  expect_device_group_ranks_match_one_rank(4);
}

// end_job's test seam: the line that would end the job, thrown instead.
struct ThrowInsteadOfEndingTheJob {
  dist::detail::EndJobHandler previous =
      dist::detail::set_end_job_handler([](const std::string& line) { throw Error(line); });
  ~ThrowInsteadOfEndingTheJob() { dist::detail::set_end_job_handler(previous); }
};

TEST(DeviceGroup, ARankThatNeverIssuesMakesTheOthersTimeOutNamingIt) {
  CONVKIT_SKIP_SIM_THREAD_RANKS_IF_UNSUPPORTED();
  ThrowInsteadOfEndingTheJob seam;
  const int ranks = 3;
  ThreadGroups bootstrap(ranks);
  std::vector<std::string> errors(ranks);
  std::vector<double> seconds(ranks, 0);
  bootstrap.run([&](int r) {
    auto group = dist::device_group(kSim, bootstrap.group(r), dist::ProcessGroupOptions().timeout(0.5));
    for (int k = 0; k < 3; ++k) group->allreduce_sum(ones({4}, kSim))->wait();
    if (r == 1) return;  // rank 1 stops taking part after #3
    const auto start = std::chrono::steady_clock::now();
    try {
      group->allreduce_sum(ones({4}, kSim))->wait();
    } catch (const Error& e) {
      errors[static_cast<std::size_t>(r)] = e.what();
    }
    seconds[static_cast<std::size_t>(r)] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  for (int r : {0, 2}) {
    EXPECT_EQ(errors[static_cast<std::size_t>(r)],
              "convkit: rank " + std::to_string(r) +
                  ": allreduce_sum #4 (float32 [4]) did not complete within 0.5 s: rank 1 never reached it "
                  "(its last was #3); aborting the job");
    EXPECT_GE(seconds[static_cast<std::size_t>(r)], 0.5);
    EXPECT_LT(seconds[static_cast<std::size_t>(r)], 10.0);
  }
  EXPECT_EQ(errors[1], "");
}

TEST(DeviceGroup, ACollectiveTheRanksDisagreeOnEndsTheJob) {
  CONVKIT_SKIP_SIM_THREAD_RANKS_IF_UNSUPPORTED();
  ThrowInsteadOfEndingTheJob seam;
  ThreadGroups bootstrap(2);
  std::vector<std::string> errors(2);
  bootstrap.run([&](int r) {
    auto group = dist::device_group(kSim, bootstrap.group(r), dist::ProcessGroupOptions().timeout(5));
    try {
      group->allreduce_sum(ones({r == 0 ? 4 : 5}, kSim))->wait();
    } catch (const Error& e) {
      errors[static_cast<std::size_t>(r)] = e.what();
    }
  });
  for (int r = 0; r < 2; ++r) {
    const std::string& e = errors[static_cast<std::size_t>(r)];
    EXPECT_EQ(e.rfind("convkit: rank " + std::to_string(r) + ": allreduce_sum #1 (float32 [", 0), 0u) << e;
    EXPECT_NE(e.find("failed: sim communicator: collective #1 differs between ranks"), std::string::npos) << e;
    EXPECT_NE(e.find("aborting the job"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace convkit::testing
