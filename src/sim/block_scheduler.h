#pragma once
// The cooperative scheduler that runs the CUDA threads of one block as fibers
// on one OS thread.
//
// Every OS thread that runs blocks owns one BlockScheduler (and its fiber pool).
// A CUDA thread runs until it blocks — at __syncthreads or a warp built-in — or
// returns; then the scheduler hands control straight to the next runnable thread:
//   1. a thread that a completed barrier or warp operation released (FIFO, in
//      schedule order), else
//   2. the next thread that has not started yet, else
//   3. back to the OS thread's own stack, when every thread has exited, or
//   4. nothing can run although threads remain: a deadlock, reported as an
//      error naming where each stuck thread waits.
// A barrier is completed by the last thread to arrive, a warp operation by the
// last lane to arrive, so nothing ever polls.
//
// Failures (deadlock, divergent barrier, an exception escaping a kernel
// thread, a misused built-in) end the block: control returns to the OS thread,
// parked fibers are restarted empty, and run_block throws convkit::Error.
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "convkit/sim/async_copy.h"
#include "convkit/sim/wgmma.h"
#include "convkit/sim/runtime.h"
#include "convkit/sim/schedule.h"
#include "sim/check/block_checker.h"
#include "sim/fiber.h"

namespace convkit::sim::detail {

struct SourceSite {
  const char* file = "";
  int line = 0;
  friend bool operator==(const SourceSite& a, const SourceSite& b);
};

enum class ThreadState : std::uint8_t {
  not_started,
  running,           // running now, or released and waiting in the ready queue
  at_block_barrier,  // parked in __syncthreads*
  at_warp_op,        // parked in a warp built-in
  exited,
};

// One CUDA thread of the block being run.
struct ThreadSlot {
  uint3 index{0, 0, 0};  // threadIdx
  unsigned linear = 0;   // x + y * blockDim.x + z * blockDim.x * blockDim.y
  ThreadState state = ThreadState::not_started;
  Fiber* fiber = nullptr;  // set while started and not exited
  SourceSite site;         // where it is parked
  // __syncthreads*: the kind and predicate it brought, the result it takes away.
  BarrierKind barrier_kind = BarrierKind::plain;
  int predicate = 0;
  int barrier_result = 0;
  // Warp built-ins: what it brought, and the result it takes away.
  WarpOpKind warp_kind = WarpOpKind::sync;
  unsigned warp_mask = 0;
  std::uint64_t operand = 0;
  int arg = 0;
  int width = 32;
  std::uint64_t warp_result = 0;
  // cp.async (async_copy.cpp): copies issued and not yet retired, each with
  // the count of groups the thread had committed when it was issued (its
  // group), and the batch the last wait_group retired.
  std::vector<AsyncCopy> async_pending;
  std::vector<std::uint32_t> async_group;
  std::uint32_t async_committed = 0;
  std::vector<AsyncCopy> async_retired;
};

// One issued wgmma: the warpgroup-uniform operands (lane 0's WgmmaLane, its
// `d` unused), every lane's accumulators, and the bits of the warp's share of
// A and B at the issue (wgmma.cpp checks they still hold at the wait).
struct PendingWgmma {
  WgmmaLane op;
  std::array<float*, 32> d{};
  std::vector<std::uint32_t> operands;
  std::uint32_t group = 0;
  SourceSite site;
};

// Lanes of one warp that called a warp built-in with the same mask and are
// waiting for the rest of that mask.
struct WarpGroup {
  unsigned mask = 0;
  unsigned arrived = 0;
  WarpOpKind kind = WarpOpKind::sync;
};

struct WarpState {
  // Lanes that will never arrive at anything: exited, or past the end of a
  // partial warp. Built-ins do not wait for them.
  unsigned absent = 0;
  // Groups being formed. Groups with different, even overlapping, masks may be
  // pending at the same time (divergent paths of one warp).
  std::vector<WarpGroup> pending;
  // wgmma.mma_async (wgmma.cpp, convkit/sim/wgmma.h): issued and not yet
  // performed, each with the count of groups the warp had committed when it
  // was issued (its group).
  std::vector<PendingWgmma> wgmma_pending;
  std::uint32_t wgmma_committed = 0;
  // A wgmma.fence since the warp's last wgmma.wait_group: what its next
  // wgmma needs.
  bool wgmma_fenced = false;
};

// Released threads waiting for their turn. Each thread is in it at most once,
// so a ring of blockDim threads never overflows.
class ReadyQueue {
 public:
  void reset(std::size_t capacity);
  bool empty() const { return size_ == 0; }
  void push(ThreadSlot* thread);
  ThreadSlot* pop();

 private:
  std::vector<ThreadSlot*> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

class BlockScheduler {
 public:
  // The calling OS thread's scheduler (created on first use).
  static BlockScheduler& for_this_thread();
  // The scheduler whose block is running on this OS thread, or null outside
  // kernels (the built-ins use this to find their block).
  static BlockScheduler* running();

  BlockScheduler();
  ~BlockScheduler();
  BlockScheduler(const BlockScheduler&) = delete;
  BlockScheduler& operator=(const BlockScheduler&) = delete;

  // Prepares for the blocks of one launch that this OS thread will run.
  // `checks` is null when the launch runs no sim checks.
  void begin_launch(const GridLaunch& launch, const Schedule& schedule, LaunchChecks* checks);
  // Runs one block to completion; throws convkit::Error if it fails.
  void run_block(uint3 block_index);

  // ---- called by the built-ins, on a fiber of the running block
  int block_barrier(BarrierKind kind, int predicate, SourceSite site);
  std::uint64_t warp_op(WarpOpKind kind, unsigned mask, std::uint64_t operand, int arg, int width,
                        SourceSite site);
  unsigned active_mask() const;
  // cp.async on the running thread (async_copy.cpp, convkit/sim/async_copy.h).
  void async_copy_issue(const AsyncCopy& copy);
  void async_copy_commit();
  const AsyncCopy* async_copy_retire(int keep, std::size_t* count);
  // wgmma on the running warp (wgmma.cpp): called by compute_warp_results
  // once every lane has arrived.
  void wgmma_complete(WarpOpKind kind, unsigned warp_index, ThreadSlot* lanes);
  // dev::fma in a profiled launch (convkit/sim/arithmetic_count.h).
  void add_fmas(std::uint64_t n);
  // The sim checks (check/): an access that the instrumented kernel reports
  // (or wgmma's operand reads, `async_proxy`), and the storage of a
  // __shared__ array met for the first time on this OS thread (kept by the
  // checker whether or not checks run). A failed check ends the running
  // thread there and then; it never returns.
  void check_access(std::uintptr_t address, std::size_t size, AccessKind kind, const void* pc,
                    bool async_proxy = false);
  // fence.proxy.async by the running thread.
  void proxy_fence();
  void* shared_array_storage(std::size_t bytes, const char* file, int line) {
    return checker_.static_shared_storage(bytes, file, line);
  }
  void* dynamic_shared_memory() const { return dynamic_shared_data_; }
  std::size_t dynamic_shared_bytes() const { return launch_.dynamic_shared_bytes; }
  // Its shared address (convkit/sim/wgmma.h), as the launch began.
  std::uint32_t dynamic_shared_address() const { return dynamic_shared_address_; }

 private:
  struct SharedMemoryDeleter {
    void operator()(unsigned char* p) const { ::operator delete[](p, std::align_val_t{16}); }
  };

  // -- fibers and switching (block_scheduler.cpp)
  static void fiber_entry(void* scheduler);
  [[noreturn]] void fiber_loop();
  void run_thread(ThreadSlot& thread);
  void thread_exited(ThreadSlot& thread);
  // Suspends the running fiber and resumes whatever should run next.
  void switch_to_next();
  Fiber* choose_next();
  Fiber* take_idle_fiber();
  void make_running(ThreadSlot& thread, Fiber& fiber);
  void restart_parked_fibers();
  void reset_block(uint3 block_index);
  unsigned live_threads() const { return thread_count_ - exited_count_; }
  // Records the block's first failure; the scheduler then returns to the OS thread.
  void fail(std::exception_ptr error);
  void fail(const std::string& message);
  // Fisher-Yates shuffle of values[0, count) with the block's random stream.
  void shuffle(unsigned* values, unsigned count);

  // -- __syncthreads (block_scheduler.cpp)
  void release_block_barrier();

  // -- warp built-ins (warp_ops.cpp)
  WarpGroup& join_warp_group(WarpState& warp, unsigned lane, const ThreadSlot& thread);
  void complete_ready_groups(unsigned warp_index);
  void complete_group(unsigned warp_index, std::size_t group_index);
  void compute_warp_results(unsigned warp_index, const WarpGroup& group);

  // -- messages (diagnostics.cpp)
  std::string block_name() const;
  std::string thread_name(const ThreadSlot& thread) const;
  std::string describe_wait(const ThreadSlot& thread) const;
  std::string describe_divergent_barrier(const ThreadSlot& a, const ThreadSlot& b) const;
  std::string describe_deadlock() const;

  // The launch and its geometry.
  GridLaunch launch_;
  Schedule schedule_;
  unsigned thread_count_ = 0;
  std::vector<ThreadSlot> threads_;  // by linear index
  std::vector<WarpState> warps_;

  // The block being run.
  uint3 block_index_{0, 0, 0};
  std::vector<unsigned> order_;  // linear indices in schedule order
  unsigned next_to_start_ = 0;   // position in order_ of the next thread to start
  unsigned exited_count_ = 0;
  unsigned at_barrier_count_ = 0;
  ReadyQueue ready_;
  // With guard zones on both sides under the sim checks.
  std::unique_ptr<unsigned char[], SharedMemoryDeleter> dynamic_shared_;
  unsigned char* dynamic_shared_data_ = nullptr;
  std::uint32_t dynamic_shared_address_ = 0;
  BlockChecker checker_;
  std::uint64_t random_state_ = 0;
  std::exception_ptr failure_;

  // Fibers of this OS thread.
  Fiber host_;  // the OS thread's own stack
  Fiber* running_fiber_ = nullptr;
  ThreadSlot* running_thread_ = nullptr;
  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::vector<Fiber*> idle_;
};

}  // namespace convkit::sim::detail
