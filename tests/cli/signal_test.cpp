// `convkit train` under SIGINT and SIGTERM, as a child process: it stops at
// the end of a step, exits 128 + the signal, keeps every finished epoch's
// log row and no empty log, and saves a last.ckpt from which --resume ends
// with the same weights, bit for bit, as a run never interrupted.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "cli_testing.h"
#include "convkit/io/checkpoint.h"
#include "data/data_files.h"

namespace convkit::testing {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `convkit ARGS` as a command line for Child: exec'd from the shell, so that
// a signal to the child reaches convkit itself.
std::string convkit_line(const std::string& args) { return "exec " + shell_quote(CONVKIT_CLI_PATH) + " " + args; }

// A running shell command line, its output in files.
class Child {
 public:
  Child(const std::string& command_line, const std::string& out, const std::string& err)
      : out_(out), err_(err) {
    const std::string command = command_line + " >" + shell_quote(out) + " 2>" + shell_quote(err);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // Waits until stdout holds `text`; false when the child ended first or
  // 120 s passed.
  bool wait_for_output(const std::string& text) {
    for (int i = 0; i < 120000; ++i) {
      if (read_text(out_).find(text) != std::string::npos) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        status_ = status;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  // The wait status, waiting at most 120 s (then killing it).
  int wait() {
    for (int i = 0; !reaped_ && i < 12000; ++i) {
      if (::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
      else std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(reaped_) << "convkit did not exit within 120 s of the signal";
    return status_;
  }
  std::string err() const { return read_text(err_); }
  std::string out() const { return read_text(out_); }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = -1;
};

std::vector<float> weights(const std::string& checkpoint) {
  std::vector<float> out;
  for (const auto& [name, t] : io::load_checkpoint(checkpoint).model_state) {
    const Tensor c = t.contiguous();
    out.insert(out.end(), c.data<float>(), c.data<float>() + c.numel());
  }
  return out;
}

TEST(CliSignals, InterruptedRunResumesToTheSameWeights) {
  TempDir dir;
  const std::string data = dir.file("fmnist");
  write_fashion_mnist_like(data, 384, 40);
  const std::string common = "train fmnist-cnn --data fashion-mnist:" + shell_quote(data) +
                             " --epochs 3 --batch 32 --seed 3 --no-validation --progress lines";
  const std::string whole = dir.file("whole"), cut = dir.file("cut");
  {
    Child run(convkit_line(common + " --out " + shell_quote(whole)), dir.file("w.out"), dir.file("w.err"));
    const int status = run.wait();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << run.err();
  }

  // SIGINT in epoch 2 (of 12 steps): a clean stop, exit 130, epoch 1 logged.
  Child run(convkit_line(common + " --out " + shell_quote(cut)), dir.file("c.out"), dir.file("c.err"));
  ASSERT_TRUE(run.wait_for_output("Epoch 2/3")) << run.out() << run.err();
  run.signal(SIGINT);
  const int status = run.wait();
  ASSERT_TRUE(WIFEXITED(status)) << "killed instead of stopping: " << run.err();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << run.err();
  EXPECT_NE(run.err().find("stopped by SIGINT"), std::string::npos) << run.err();
  EXPECT_NE(run.err().find("--resume"), std::string::npos) << run.err();
  EXPECT_EQ(count_lines(read_text(cut + "/log.csv")), 2);  // header + epoch 1
  const io::Checkpoint ck = io::load_checkpoint(cut + "/last.ckpt");
  EXPECT_EQ(ck.get_metadata("interrupted"), "true");
  EXPECT_GE(ck.epoch, 1);

  Child resumed(convkit_line(common + " --out " + shell_quote(cut) + " --resume " + shell_quote(cut + "/last.ckpt")),
                dir.file("r.out"), dir.file("r.err"));
  const int resumed_status = resumed.wait();
  ASSERT_TRUE(WIFEXITED(resumed_status) && WEXITSTATUS(resumed_status) == 0) << resumed.err();
  EXPECT_EQ(count_lines(read_text(cut + "/log.csv")), 4);  // epochs 2 and 3 appended
  EXPECT_EQ(weights(cut + "/last.ckpt"), weights(whole + "/last.ckpt"));
}

TEST(CliSignals, SigtermBeforeTheFirstEpochEndsLeavesNoEmptyLog) {
  TempDir dir;
  const std::string data = dir.file("fmnist");
  write_fashion_mnist_like(data, 640, 40);
  const std::string out = dir.file("run");
  Child run(convkit_line("train fmnist-cnn --data fashion-mnist:" + shell_quote(data) +
                         " --epochs 2 --batch 32 --no-validation --progress lines --out " + shell_quote(out)),
            dir.file("o"), dir.file("e"));
  ASSERT_TRUE(run.wait_for_output("Epoch 1/2")) << run.out() << run.err();
  run.signal(SIGTERM);
  const int status = run.wait();
  ASSERT_TRUE(WIFEXITED(status)) << run.err();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << run.err();
  EXPECT_FALSE(std::filesystem::exists(out + "/log.csv"));
  const io::Checkpoint ck = io::load_checkpoint(out + "/last.ckpt");
  EXPECT_EQ(ck.epoch, 0);
  EXPECT_GE(ck.step, 1);
}

// A signal that reaches one rank of a data-parallel job stops every rank at
// the same step: the ranks agree on stopping at every step, so no rank is
// left waiting in a collective, rank 0's checkpoint holds a step that every
// rank finished, and the job resumes from it to the weights of a run never
// interrupted. Each rank records its pid through a wrapper, so that the
// signal goes to rank 1 alone.
TEST(CliSignals, ASignalToOneRankStopsEveryRankAtTheSameStep) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  TempDir dir;
  const std::string data = dir.file("fmnist");
  write_fashion_mnist_like(data, 384, 40);
  const std::string wrapper = dir.file("rank.sh");
  std::ofstream(wrapper) << "echo $$ > " << shell_quote(dir.file("pid.")) << "$OMPI_COMM_WORLD_RANK\n"
                         << "exec " << shell_quote(CONVKIT_CLI_PATH) << " \"$@\"\n";
  const std::string common = "train fmnist-cnn --data fashion-mnist:" + shell_quote(data) +
                             " --epochs 3 --batch 16 --seed 3 --no-validation --progress lines";
  const auto on_two_ranks = [&](const std::string& args) {
    return "exec env " + mpirun_prefix(2) + "sh " + shell_quote(wrapper) + " " + args;
  };
  const std::string whole = dir.file("whole"), cut = dir.file("cut");
  {
    Child run(on_two_ranks(common + " --out " + shell_quote(whole)), dir.file("w.out"), dir.file("w.err"));
    const int status = run.wait();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << run.err();
  }

  Child run(on_two_ranks(common + " --out " + shell_quote(cut)), dir.file("c.out"), dir.file("c.err"));
  ASSERT_TRUE(run.wait_for_output("Epoch 2/3")) << run.out() << run.err();  // rank 0 speaks for the job
  const pid_t rank1 = std::stoi(read_text(dir.file("pid.1")));
  ASSERT_EQ(::kill(rank1, SIGINT), 0);
  const int status = run.wait();
  ASSERT_TRUE(WIFEXITED(status)) << run.err();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << run.err();
  // Both ranks stopped after the same step of epoch 2, each saying so.
  const std::string err = run.err();
  const std::size_t first = err.find("train: stopped by ");
  ASSERT_NE(first, std::string::npos) << err;
  const std::size_t second = err.find("train: stopped by ", first + 1);
  ASSERT_NE(second, std::string::npos) << err;
  const auto where = [&](std::size_t at) {
    const std::size_t after = err.find(" after step ", at);
    return err.substr(after, err.find(';', after) - after);
  };
  EXPECT_EQ(where(first), where(second)) << err;
  EXPECT_NE(err.find("stopped by SIGINT"), std::string::npos) << err;  // rank 1's own reason
  EXPECT_EQ(count_lines(read_text(cut + "/log.csv")), 2);               // header + epoch 1
  const io::Checkpoint ck = io::load_checkpoint(cut + "/last.ckpt");
  EXPECT_EQ(ck.get_metadata("interrupted"), "true");

  Child resumed(on_two_ranks(common + " --out " + shell_quote(cut) + " --resume " + shell_quote(cut + "/last.ckpt")),
                dir.file("r.out"), dir.file("r.err"));
  const int resumed_status = resumed.wait();
  ASSERT_TRUE(WIFEXITED(resumed_status) && WEXITSTATUS(resumed_status) == 0) << resumed.err();
  EXPECT_EQ(weights(cut + "/last.ckpt"), weights(whole + "/last.ckpt"));
}

}  // namespace
}  // namespace convkit::testing
