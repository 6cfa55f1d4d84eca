// `mpirun -np 2 convkit train`: data-parallel training through the tool.
// Two ranks with batch B each must train exactly as one rank with batch 2B
// (the shards interleave, so each step's images are the same, and the
// gradient is averaged), on a model without dropout, whose masks would
// differ. A checkpoint written by either resumes on the other. Skipped
// where no mpirun is installed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_testing.h"
#include "convkit/io/checkpoint.h"
#include "data/data_files.h"

namespace convkit::testing {
namespace {

namespace json = io::json;

// The tool on `ranks` ranks, one OpenMP thread each.
CommandResult convkit_on_ranks(int ranks, const std::string& args) {
  return run_command(mpirun_prefix(ranks) + shell_quote(CONVKIT_CLI_PATH) + " " + args);
}

class CliDistributed : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
    write_fashion_mnist_like(dir_.file("fm"), 128, 40);
    std::ofstream(dir_.file("net.spec")) << "Sequential(\n"
                                            "  Conv2d(1, 4, 3),\n"
                                            "  ReLU(),\n"
                                            "  MaxPool2d(2),\n"
                                            "  Flatten(),\n"
                                            "  Linear(676, 10))\n";
  }
  // `train` with everything fixed but the batch, epochs and where it goes.
  std::string train(std::int64_t batch, int epochs, const std::string& out) const {
    return "train --spec " + shell_quote(dir_.file("net.spec")) + " --data fashion-mnist:" +
           shell_quote(dir_.file("fm")) + " --optimizer sgd --schedule constant --progress none --json" +
           " --batch " + std::to_string(batch) + " --epochs " + std::to_string(epochs) + " --out " +
           shell_quote(dir_.file(out));
  }
  io::Checkpoint last(const std::string& out) const { return io::load_checkpoint(dir_.file(out) + "/last.ckpt"); }

  TempDir dir_;
};

void expect_same_weights(const io::Checkpoint& a, const io::Checkpoint& b) {
  ASSERT_EQ(a.model_state.size(), b.model_state.size());
  for (std::size_t i = 0; i < a.model_state.size(); ++i) {
    const auto& [key, ta] = a.model_state[i];
    const std::vector<float> x = ta.to_vector<float>();
    const std::vector<float> y = find_tensor(b.model_state, key).to_vector<float>();
    ASSERT_EQ(x.size(), y.size()) << key;
    double worst = 0;
    for (std::size_t j = 0; j < x.size(); ++j)
      worst = std::max(worst, std::abs(double(x[j]) - double(y[j])) / (1e-3 + std::abs(double(y[j]))));
    // Sums over the ranks add the same numbers in another order: float
    // rounding, compounded over 8 steps.
    EXPECT_LT(worst, 1e-4) << key;
  }
}

TEST_F(CliDistributed, TwoRanksTrainAsOneRankWithTwiceTheBatch) {
  const CommandResult two = convkit_on_ranks(2, train(16, 2, "two"));
  ASSERT_EQ(two.status, 0) << two.err << two.out;
  const CommandResult one = convkit(train(32, 2, "one"));
  ASSERT_EQ(one.status, 0) << one.err << one.out;

  // Rank 0 alone speaks: one JSON line, and the test set counted once.
  const std::size_t json_line = two.out.find("\"command\"");
  ASSERT_NE(json_line, std::string::npos) << two.out;
  EXPECT_EQ(two.out.find("\"command\"", json_line + 1), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("data-parallel: 2 ranks (mpi), batch 16 per rank, 32 per step in all"),
            std::string::npos)
      << two.out;
  const json::Value r2 = json::parse(two.last_line(), "two ranks");
  const json::Value r1 = json::parse(one.last_line(), "one rank");
  EXPECT_EQ(number(r2, "ranks"), 2);
  EXPECT_EQ(number(r2, "test_images"), 40);
  EXPECT_NEAR(number(r2, "train_loss"), number(r1, "train_loss"), 1e-4);
  EXPECT_NEAR(number(r2, "test_loss"), number(r1, "test_loss"), 1e-4);
  expect_same_weights(last("two"), last("one"));
  EXPECT_EQ(last("two").get_metadata("ranks"), "2");
}

TEST_F(CliDistributed, CheckpointsResumeOnAnotherNumberOfRanks) {
  ASSERT_EQ(convkit(train(32, 2, "straight")).status, 0);

  // Written by 2 ranks, finished by 1.
  const CommandResult first = convkit_on_ranks(2, train(16, 1, "a"));
  ASSERT_EQ(first.status, 0) << first.err;
  const CommandResult rest = convkit(train(32, 2, "a") + " --resume " + shell_quote(dir_.file("a") + "/last.ckpt"));
  ASSERT_EQ(rest.status, 0) << rest.err << rest.out;
  EXPECT_EQ(last("a").epoch, 2);
  expect_same_weights(last("a"), last("straight"));

  // Written by 1, finished by 2.
  ASSERT_EQ(convkit(train(32, 1, "b")).status, 0);
  const CommandResult rest2 =
      convkit_on_ranks(2, train(16, 2, "b") + " --resume " + shell_quote(dir_.file("b") + "/last.ckpt"));
  ASSERT_EQ(rest2.status, 0) << rest2.err << rest2.out;
  EXPECT_EQ(last("b").epoch, 2);
  expect_same_weights(last("b"), last("straight"));
}

// A model on sim: the group takes cpu tensors, so DistributedDataParallel
// stages the broadcast and the gradients through cpu buffers.
TEST_F(CliDistributed, ModelsOnSimTrainOnRanksThroughCpuBuffers) {
  const CommandResult two = convkit_on_ranks(2, train(16, 1, "sim2") + " --device sim");
  ASSERT_EQ(two.status, 0) << two.err << two.out;
  const CommandResult one = convkit(train(32, 1, "sim1") + " --device sim");
  ASSERT_EQ(one.status, 0) << one.err << one.out;
  EXPECT_NEAR(number(json::parse(two.last_line(), "two ranks"), "test_loss"),
              number(json::parse(one.last_line(), "one rank"), "test_loss"), 1e-4);
  expect_same_weights(last("sim2"), last("sim1"));
}

// Every rank fails here; each says which it is, and the job ends.
TEST_F(CliDistributed, ARankErrorNamesTheRankAndEndsTheJob) {
  const CommandResult r = convkit_on_ranks(2, "train fmnist-cnn --data fashion-mnist:" +
                                                  shell_quote(dir_.file("missing")) + " --progress none");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("rank 0 of 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1 of 2"), std::string::npos) << r.err;
}

// The benchmark checks the sums before it times them, and reports one line
// per size (8 B to 2 KiB: 8, 32, 128, 512, 2048) from rank 0 alone.
TEST_F(CliDistributed, BenchAllreduceTimesTheGroupOfTheJob) {
  const CommandResult r = convkit_on_ranks(2, "bench allreduce --max-bytes 2048 --json");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("2 ranks, mpi group"), std::string::npos) << r.out;
  std::vector<double> sizes;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    const json::Value v = json::parse(line, "bench allreduce --json");
    EXPECT_EQ(number(v, "ranks"), 2);
    EXPECT_GT(number(v, "seconds"), 0);
    sizes.push_back(number(v, "bytes"));
  }
  EXPECT_EQ(sizes, (std::vector<double>{8, 32, 128, 512, 2048})) << r.out;
}

}  // namespace
}  // namespace convkit::testing
