// A checkpoint save that fails — the disk fills up (ENOSPC), the device
// reports an I/O error, or the process is killed with SIGKILL at any point —
// leaves the previous checkpoint intact and loadable. Faults come through
// AtomicFile's I/O hook at each of its stages, and the kills both there
// (exact points) and from a parent at random moments of real saves.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <random>
#include <thread>

#include "io/atomic_file.h"
#include "io/io_testing.h"

namespace convkit {
namespace {

using io::detail::IoStage;
using io_testing::ScratchDir;
using io_testing::throws_with;

// 8 MiB of weights, so a save spans several 1 MiB flushes; `step` tells
// versions apart, and so do the weights (step % 4). The tensors are made
// once, before any fork: a forked child must not start OpenMP work, whose
// thread pool does not survive fork.
const Tensor& weights_of(std::int64_t step) {
  static const std::vector<Tensor> all = [] {
    std::vector<Tensor> out;
    for (int k = 0; k < 4; ++k) out.push_back(full({2 * 1024 * 1024}, k));
    return out;
  }();
  return all[static_cast<std::size_t>(step % 4)];
}

io::Checkpoint version(std::int64_t step) {
  io::Checkpoint ck;
  ck.model_spec = "ReLU()";
  ck.step = step;
  ck.model_state = {{"w", weights_of(step)}};
  return ck;
}

// The checkpoint at `path` loads, is one of the versions written, and its
// weights are that version's.
::testing::AssertionResult loads_as_a_version(const std::string& path, std::int64_t lo,
                                              std::int64_t hi) {
  io::Checkpoint ck;
  try {
    ck = io::load_checkpoint(path);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "does not load: " << e.what();
  }
  if (ck.step < lo || ck.step > hi) return ::testing::AssertionFailure() << "step " << ck.step;
  if (!io_testing::same_bits(ck.model_state[0].second, version(ck.step).model_state[0].second))
    return ::testing::AssertionFailure() << "weights of step " << ck.step << " differ";
  return ::testing::AssertionSuccess();
}

// Which call fails, and how; the hook has no state of its own but these.
std::atomic<IoStage> g_stage{IoStage::write};
std::atomic<std::uint64_t> g_after_bytes{0};
std::atomic<int> g_errno{0};
std::atomic<bool> g_kill{false};

int fault_hook(IoStage stage, std::uint64_t bytes_so_far) {
  if (stage != g_stage.load() || bytes_so_far < g_after_bytes.load()) return 0;
  if (g_kill.load()) ::raise(SIGKILL);
  return g_errno.load();
}

struct HookGuard {
  HookGuard() { io::detail::set_io_fault_hook(fault_hook); }
  ~HookGuard() { io::detail::set_io_fault_hook(nullptr); }
};

struct Point {
  IoStage stage;
  std::uint64_t after_bytes;
  const char* what;
};
// Before the first byte, mid-file, at the end of the data, before the fsync
// and before the rename.
const Point kPoints[] = {{IoStage::write, 0, "writing"},
                         {IoStage::write, 3u << 20, "writing"},
                         {IoStage::write, 8u << 20, "writing"},
                         {IoStage::fsync, 0, "fsync"},
                         {IoStage::rename, 0, "renaming"}};

TEST(SaveFaults, FullDiskOrIoErrorKeepsThePreviousCheckpoint) {
  ScratchDir dir;
  const std::string path = dir.file("last.ckpt");
  io::save_checkpoint(path, version(1));
  HookGuard hook;
  for (const int error : {ENOSPC, EIO}) {
    for (const Point& p : kPoints) {
      SCOPED_TRACE(std::string(p.what) + " after " + std::to_string(p.after_bytes) + " bytes, " +
                   std::strerror(error));
      g_stage = p.stage;
      g_after_bytes = p.after_bytes;
      g_errno = error;
      EXPECT_TRUE(throws_with([&] { io::save_checkpoint(path, version(2)); },
                              {"save_checkpoint", path, p.what, std::strerror(error)}));
      EXPECT_TRUE(loads_as_a_version(path, 1, 1));
      EXPECT_EQ(dir.entries(), std::vector<std::string>{"last.ckpt"});  // no temporary left
    }
  }
  g_errno = 0;  // the disk has room again: the next save works
  io::save_checkpoint(path, version(2));
  EXPECT_TRUE(loads_as_a_version(path, 2, 2));
}

// Runs `body` in a child and returns its wait status.
template <typename F>
int in_child(F body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    std::_Exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(SaveFaults, KillAtEachStageKeepsThePreviousCheckpoint) {
  ScratchDir dir;
  const std::string path = dir.file("last.ckpt");
  io::save_checkpoint(path, version(1));
  const io::Checkpoint next = version(2);
  for (const Point& p : kPoints) {
    SCOPED_TRACE(std::string("killed at ") + p.what + " after " + std::to_string(p.after_bytes) + " bytes");
    const int status = in_child([&] {
      g_stage = p.stage;
      g_after_bytes = p.after_bytes;
      g_kill = true;
      io::detail::set_io_fault_hook(fault_hook);
      io::save_checkpoint(path, next);
    });
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    EXPECT_TRUE(loads_as_a_version(path, 1, 1));
  }
  // Each killed save left its temporary, which the next save cleared away;
  // the last one is still there, until a save that is not killed.
  EXPECT_EQ(dir.entries().size(), 2u);
  io::save_checkpoint(path, version(3));
  EXPECT_TRUE(loads_as_a_version(path, 3, 3));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"last.ckpt"});
}

TEST(SaveFaults, ATemporaryOfALiveWriterIsLeftAlone) {
  ScratchDir dir;
  const std::string path = dir.file("last.ckpt");
  // A writer that is still running (a stopped child), and one long gone (a
  // child already reaped), each with a temporary of the target; plus a file
  // that only looks like one, and another target's temporary.
  const pid_t live = ::fork();
  if (live == 0) {
    ::pause();
    std::_Exit(0);
  }
  const pid_t gone = ::fork();
  if (gone == 0) std::_Exit(0);
  ::waitpid(gone, nullptr, 0);
  const auto touch = [&](const std::string& name) {
    std::FILE* f = std::fopen(dir.file(name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  };
  const std::string live_temp = ".last.ckpt.tmp." + std::to_string(live) + ".0";
  touch(live_temp);
  touch(".last.ckpt.tmp." + std::to_string(gone) + ".0");
  touch(".last.ckpt.tmp.notapid.0");
  touch(".best.ckpt.tmp." + std::to_string(gone) + ".0");
  io::save_checkpoint(path, version(1));
  ::kill(live, SIGKILL);
  ::waitpid(live, nullptr, 0);
  std::vector<std::string> left = dir.entries();
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{".best.ckpt.tmp." + std::to_string(gone) + ".0",
                                            live_temp, ".last.ckpt.tmp.notapid.0", "last.ckpt"}));
}

TEST(SaveFaults, KillAtRandomMomentsKeepsALoadableCheckpoint) {
  ScratchDir dir;
  const std::string path = dir.file("last.ckpt");
  io::save_checkpoint(path, version(0));
  // How long one save takes here, so the kills land inside saves.
  const auto t0 = std::chrono::steady_clock::now();
  io::save_checkpoint(path, version(0));
  const double save_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  std::mt19937_64 rng(testing::kSeed);
  std::int64_t newest = 0;
  int killed_mid_run = 0;
  for (int round = 0; round < 12; ++round) {
    // The child saves versions newest+1, newest+2, ... until it is killed.
    const std::int64_t first = newest + 1;
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (std::int64_t s = first;; ++s) io::save_checkpoint(path, version(s));
    }
    std::uniform_real_distribution<double> delay(0.0, 3.0 * save_us);
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<std::int64_t>(delay(rng))));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    killed_mid_run += WIFSIGNALED(status);
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_TRUE(loads_as_a_version(path, newest, first + 1000000));
    newest = io::load_checkpoint(path).step;
  }
  EXPECT_EQ(killed_mid_run, 12);
}

}  // namespace
}  // namespace convkit
