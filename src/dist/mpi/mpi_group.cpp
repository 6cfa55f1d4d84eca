// The MPI process group. One thread per process runs MPI: it starts MPI,
// runs the collectives in the order the program issued them, each as a
// nonblocking operation polled against its deadline, and at exit tells the
// peers it is leaving, waits for them, and finalizes MPI.
#include "dist/mpi/mpi_group.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "convkit/core/error.h"
#include "dist/collective_check.h"
#include "dist/failure_report.h"
#include "dist/poll_back_off.h"
#include "dist/mpi/progress_exchange.h"
#include "dist/work.h"

namespace convkit::dist::mpi {
namespace {

using Clock = std::chrono::steady_clock;

enum class Kind { allreduce_sum, broadcast, barrier };

struct Collective {
  Kind kind;
  std::int64_t seq;
  int root;
  std::shared_ptr<PendingWork> work;
};

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::allreduce_sum: return "allreduce_sum";
    case Kind::broadcast: return "broadcast";
    case Kind::barrier: return "barrier";
  }
  return "?";
}

std::string describe(const Collective& c) {
  std::string out = detail::concat(kind_name(c.kind), " #", c.seq);
  if (c.kind == Kind::broadcast) out += detail::concat(" from rank ", c.root);
  if (c.kind != Kind::barrier) out += " (" + describe_tensor(c.work->tensor()) + ")";
  return out;
}

class Runtime {
 public:
  explicit Runtime(double timeout_seconds) : timeout_seconds_(timeout_seconds) {
    thread_ = std::thread([this] { thread_main(); });
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return started_ || !start_error_.empty(); });
    if (!start_error_.empty()) {
      lock.unlock();
      thread_.join();
      CK_FAIL(start_error_);
    }
  }
  ~Runtime() { shutdown(); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  std::shared_ptr<Work> issue(Kind kind, Tensor tensor, int root) {
    auto work = std::make_shared<PendingWork>(std::move(tensor));
    {
      std::lock_guard lock(mutex_);
      CK_CHECK(!stopping_, "dist::", kind_name(kind),
               ": the MPI process group has shut down (the program is exiting); no collective can start now");
      queue_.push_back(Collective{kind, ++issued_, root, work});
    }
    changed_.notify_all();
    return work;
  }

  // Runs what was issued, says goodbye to the peers and finalizes MPI. At
  // exit (a static's destructor), or never when the process dies first, in
  // which case the launcher or the peers' timeout ends the job.
  void shutdown() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void thread_main() {
    try {
      start_mpi();
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      start_error_ = e.what();
      changed_.notify_all();
      return;
    }
    {
      std::lock_guard lock(mutex_);
      started_ = true;
    }
    changed_.notify_all();
    try {
      for (;;) {
        Collective next;
        {
          std::unique_lock lock(mutex_);
          changed_.wait(lock, [this] { return !queue_.empty() || stopping_; });
          if (queue_.empty()) break;  // stopping, and everything issued has run
          next = std::move(queue_.front());
          queue_.pop_front();
        }
        run(next);
        completed_ = next.seq;
        next.work->complete();
      }
      leave_job();
    } catch (const std::exception& e) {
      // Nothing here can be retried: the peers are inside the same collective.
      abort_job(detail::concat("convkit: rank ", rank_, ": the process group failed: ", e.what(), "; aborting the job"));
    }
    stop_mpi();
  }

  void start_mpi() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      // The program started MPI itself; this thread may call it only if the
      // program asked for MPI_THREAD_MULTIPLE.
      int provided = 0;
      MPI_Query_thread(&provided);
      CK_CHECK(provided == MPI_THREAD_MULTIPLE,
               "dist::world(): the program initialised MPI below MPI_THREAD_MULTIPLE; the process group calls MPI "
               "from a thread of its own, so initialise it with MPI_Init_thread(MPI_THREAD_MULTIPLE) or leave it "
               "to dist::world()");
    } else {
      // This thread calls MPI alone, so it is MPI's "main thread" and
      // FUNNELED suffices; it also finalizes, as the standard asks.
      int provided = 0;
      const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      CK_CHECK(rc == MPI_SUCCESS, "dist::world(): MPI_Init_thread failed (error ", rc, ")");
      CK_CHECK(provided >= MPI_THREAD_FUNNELED, "dist::world(): this MPI offers thread level ", provided,
               ", below MPI_THREAD_FUNNELED, which the process group's thread needs");
      owns_mpi_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Communicators of their own, so that nothing else the program sends on
    // MPI_COMM_WORLD can match ours.
    MPI_Comm_dup(MPI_COMM_WORLD, &collectives_);
    MPI_Comm_dup(MPI_COMM_WORLD, &progress_comm_);
    progress_ = std::make_unique<ProgressExchange>(progress_comm_);
  }

  void stop_mpi() {
    progress_->close();
    progress_.reset();
    MPI_Comm_free(&progress_comm_);
    MPI_Comm_free(&collectives_);
    if (owns_mpi_) MPI_Finalize();
  }

  void run(const Collective& c) {
    progress_->announce_reached(c.seq);
    MPI_Request request = MPI_REQUEST_NULL;
    if (c.kind == Kind::barrier) {
      MPI_Ibarrier(collectives_, &request);
    } else {
      const Tensor& t = c.work->tensor();
      const MPI_Datatype type = t.dtype() == DType::float64 ? MPI_DOUBLE : MPI_FLOAT;
      const int count = static_cast<int>(t.numel());  // issue() checked that it fits
      if (c.kind == Kind::allreduce_sum) {
        MPI_Iallreduce(MPI_IN_PLACE, t.raw_data(), count, type, MPI_SUM, collectives_, &request);
      } else {
        MPI_Ibcast(t.raw_data(), count, type, c.root, collectives_, &request);
      }
    }
    StalledCollective what{rank_, describe(c), c.seq, false, timeout_seconds_};
    wait_for(request, what);
  }

  // At the end of the program: the peers learn that this rank issues no more
  // collectives, and every rank waits for the others before MPI_Finalize,
  // which would otherwise wait for them without a deadline.
  void leave_job() {
    progress_->announce_leaving(completed_);
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibarrier(progress_comm_, &request);
    StalledCollective what{rank_, detail::concat("the end of the job (after #", completed_, ")"), completed_ + 1,
                           true, timeout_seconds_};
    wait_for(request, what);
  }

  void wait_for(MPI_Request& request, const StalledCollective& what) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds_);
    for (int polls = 0;; ++polls) {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done) return;
      progress_->poll();
      if (!what.end_of_job) {
        if (const PeerProgress* gone = progress_->departed_before(what.seq)) {
          abort_job(departed_peer_report(what, *gone));
        }
      }
      if (Clock::now() >= deadline) {
        progress_->poll();
        abort_job(timeout_report(what, progress_->peers()));
      }
      poll_back_off(polls);
    }
  }

  [[noreturn]] void abort_job(const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();  // MPI_Abort does not return; should it, the job still ends
  }

  const double timeout_seconds_;
  int rank_ = 0;
  int size_ = 1;
  bool owns_mpi_ = false;
  MPI_Comm collectives_ = MPI_COMM_NULL;
  MPI_Comm progress_comm_ = MPI_COMM_NULL;
  std::unique_ptr<ProgressExchange> progress_;
  std::int64_t completed_ = 0;  // the group's thread's alone

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Collective> queue_;
  std::int64_t issued_ = 0;
  bool started_ = false;
  bool stopping_ = false;
  std::string start_error_;
  std::thread thread_;
};

void check_count(const char* op, const Tensor& tensor) {
  CK_CHECK(tensor.numel() <= INT_MAX, "dist::", op, ": the tensor (", describe_tensor(tensor),
           ") has more elements than one MPI call takes (", INT_MAX, "); split it");
}

class MpiGroup final : public ProcessGroup {
 public:
  explicit MpiGroup(std::shared_ptr<Runtime> runtime) : runtime_(std::move(runtime)) {}
  int rank() const override { return runtime_->rank(); }
  int size() const override { return runtime_->size(); }
  std::string backend() const override { return "mpi"; }

  std::shared_ptr<Work> allreduce_sum(Tensor tensor) override {
    check_collective_tensor("allreduce_sum", tensor);
    check_count("allreduce_sum", tensor);
    return runtime_->issue(Kind::allreduce_sum, std::move(tensor), 0);
  }
  std::shared_ptr<Work> broadcast(Tensor tensor, int root) override {
    check_collective_tensor("broadcast", tensor);
    check_count("broadcast", tensor);
    check_root("broadcast", root, size());
    return runtime_->issue(Kind::broadcast, std::move(tensor), root);
  }
  void barrier() override { runtime_->issue(Kind::barrier, Tensor(), 0)->wait(); }

 private:
  std::shared_ptr<Runtime> runtime_;
};

// Shuts MPI down at exit however many group handles are still alive: a
// process that ran MPI_Init and ends without MPI_Finalize makes mpirun
// report the whole job as failed.
struct ShutdownAtExit {
  std::shared_ptr<Runtime> runtime;
  ~ShutdownAtExit() {
    if (runtime) runtime->shutdown();
  }
};

}  // namespace

std::shared_ptr<ProcessGroup> make_world_group(double timeout_seconds) {
  static ShutdownAtExit at_exit;
  CK_CHECK(!at_exit.runtime, "dist: MPI's world group was already made (dist::world() returns it)");
  at_exit.runtime = std::make_shared<Runtime>(timeout_seconds);
  return std::make_shared<MpiGroup>(at_exit.runtime);
}

}  // namespace convkit::dist::mpi
