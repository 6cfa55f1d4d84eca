// The block scheduler: starting, switching and retiring CUDA threads, and
// __syncthreads. Warp built-ins are in warp_ops.cpp, error messages in
// diagnostics.cpp. See block_scheduler.h for the scheduling rules.
#include "sim/block_scheduler.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "convkit/core/error.h"
#include "convkit/sim/builtin_variables.h"

namespace convkit::sim::detail {
namespace {

thread_local BlockScheduler* running_scheduler = nullptr;

// splitmix64: a small, good 64-bit mixer, used to derive per-block seeds and
// the random schedule's permutations.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

bool operator==(const SourceSite& a, const SourceSite& b) {
  // __builtin_FILE strings from different translation units need not share
  // an address, so compare the text.
  return a.line == b.line && std::strcmp(a.file, b.file) == 0;
}

// ---------------------------------------------------------------- ReadyQueue

void ReadyQueue::reset(std::size_t capacity) {
  ring_.assign(capacity, nullptr);
  head_ = 0;
  size_ = 0;
}

void ReadyQueue::push(ThreadSlot* thread) {
  ring_[(head_ + size_) % ring_.size()] = thread;
  ++size_;
}

ThreadSlot* ReadyQueue::pop() {
  ThreadSlot* thread = ring_[head_];
  head_ = (head_ + 1) % ring_.size();
  --size_;
  return thread;
}

// ------------------------------------------------------------ lifecycle

BlockScheduler& BlockScheduler::for_this_thread() {
  static thread_local BlockScheduler scheduler;
  return scheduler;
}

BlockScheduler* BlockScheduler::running() { return running_scheduler; }

BlockScheduler::BlockScheduler() = default;
BlockScheduler::~BlockScheduler() = default;

void BlockScheduler::begin_launch(const GridLaunch& launch, const Schedule& schedule,
                                  LaunchChecks* checks) {
  launch_ = launch;
  schedule_ = schedule;
  dynamic_shared_address_ = ::convkit::sim::dynamic_shared_address();
  const dim3 b = launch.block;
  thread_count_ = b.x * b.y * b.z;
  threads_.assign(thread_count_, ThreadSlot{});
  for (unsigned linear = 0; linear < thread_count_; ++linear) {
    ThreadSlot& t = threads_[linear];
    t.linear = linear;
    t.index = uint3{linear % b.x, linear / b.x % b.y, linear / (b.x * b.y)};
  }
  warps_.resize((thread_count_ + 31) / 32);
  order_.resize(thread_count_);
  ready_.reset(thread_count_);
  checker_.begin_launch(checks, thread_count_);
  // The kernels' arguments live in launch()'s frame on this stack (one OS
  // thread runs a checked launch): see Fiber::forget_frames_above.
  if (checks != nullptr) host_.forget_frames_above(__builtin_frame_address(0));
  // The built-in variables are per OS thread; these two stay for the launch.
  blockDim = launch.block;
  gridDim = launch.grid;
}

void BlockScheduler::reset_block(uint3 block_index) {
  block_index_ = block_index;
  blockIdx = block_index;
  for (ThreadSlot& t : threads_) {
    t.state = ThreadState::not_started;
    t.fiber = nullptr;
    t.async_pending.clear();
    t.async_group.clear();
    t.async_committed = 0;
  }
  for (std::size_t w = 0; w < warps_.size(); ++w) {
    // Lanes past the end of the block never arrive anywhere.
    const unsigned first = static_cast<unsigned>(w) * 32;
    const unsigned lanes = std::min(32u, thread_count_ - first);
    warps_[w].absent = lanes == 32 ? 0u : ~((1u << lanes) - 1u);
    warps_[w].pending.clear();
    warps_[w].wgmma_pending.clear();
    warps_[w].wgmma_committed = 0;
    warps_[w].wgmma_fenced = false;
  }
  next_to_start_ = 0;
  exited_count_ = 0;
  at_barrier_count_ = 0;
  ready_.reset(thread_count_);
  failure_ = nullptr;

  // The order threads start in. Forward and reverse are fixed; random draws a
  // fresh permutation per block (and per barrier, see release_block_barrier),
  // seeded by the schedule's seed and the block's position so runs repeat.
  for (unsigned i = 0; i < thread_count_; ++i) order_[i] = i;
  if (schedule_.order == ScheduleOrder::reverse) {
    std::reverse(order_.begin(), order_.end());
  } else if (schedule_.order == ScheduleOrder::random) {
    const std::uint64_t block_linear =
        block_index.x +
        static_cast<std::uint64_t>(launch_.grid.x) *
            (block_index.y + static_cast<std::uint64_t>(launch_.grid.y) * block_index.z);
    random_state_ = mix64(schedule_.seed ^ mix64(block_linear));
    shuffle(order_.data(), thread_count_);
  }

  // A fresh, exact-size, poisoned buffer per block: 0xFF bytes read as NaN or
  // -1, so a kernel that reads dynamic shared memory before writing it sees
  // garbage rather than the previous block's values.
  const std::size_t bytes = launch_.dynamic_shared_bytes;
  const std::size_t guard = checker_.dynamic_shared_guard();
  dynamic_shared_.reset(
      static_cast<unsigned char*>(::operator new[](bytes + 2 * guard, std::align_val_t{16})));
  dynamic_shared_data_ = dynamic_shared_.get() + guard;
  std::memset(dynamic_shared_data_, 0xFF, bytes);
  checker_.begin_block(block_index, dynamic_shared_data_, bytes);
}

void BlockScheduler::shuffle(unsigned* values, unsigned count) {
  for (unsigned i = count; i > 1; --i) {
    random_state_ = mix64(random_state_);
    std::swap(values[i - 1], values[random_state_ % i]);
  }
}

void BlockScheduler::run_block(uint3 block_index) {
  reset_block(block_index);
  running_scheduler = this;
  running_fiber_ = &host_;
  running_thread_ = nullptr;
  switch_to_next();  // returns when the block is over
  running_scheduler = nullptr;
  checker_.end_block();
  dynamic_shared_.reset();
  dynamic_shared_data_ = nullptr;
  if (failure_) {
    restart_parked_fibers();
    std::rethrow_exception(std::exchange(failure_, nullptr));
  }
}

void BlockScheduler::restart_parked_fibers() {
  for (ThreadSlot& t : threads_) {
    if (t.fiber == nullptr) continue;
    t.fiber->restart();
    idle_.push_back(t.fiber);
    t.fiber = nullptr;
  }
}

void BlockScheduler::fail(std::exception_ptr error) {
  if (!failure_) failure_ = std::move(error);
}

void BlockScheduler::fail(const std::string& message) {
  fail(std::make_exception_ptr(Error(message)));
}

// ------------------------------------------------------------ switching

void BlockScheduler::fiber_entry(void* scheduler) {
  Fiber::on_first_entry();
  static_cast<BlockScheduler*>(scheduler)->fiber_loop();
}

// Each pass runs one CUDA thread. When the thread returns without having
// blocked, the fiber usually takes the next unstarted thread itself (direct
// mode: choose_next hands back this very fiber, so there is no switch at all).
void BlockScheduler::fiber_loop() {
  for (;;) {
    ThreadSlot& thread = *running_thread_;  // assigned by whoever switched here
    run_thread(thread);
    thread_exited(thread);
    idle_.push_back(running_fiber_);
    switch_to_next();
  }
}

void BlockScheduler::run_thread(ThreadSlot& thread) {
  try {
    launch_.body(launch_.closure);
    return;
  } catch (const std::exception& e) {
    fail("sim: block " + block_name() + ", thread " + thread_name(thread) + ": " + e.what());
  } catch (...) {
    fail(std::current_exception());
  }
  running_fiber_->forget_frames();  // the kernel's frames were unwound, not returned from
}

void BlockScheduler::thread_exited(ThreadSlot& thread) {
  thread.state = ThreadState::exited;
  thread.fiber = nullptr;
  ++exited_count_;
  if (failure_) return;
  // Waiters no longer wait for this thread.
  const unsigned warp_index = thread.linear / 32;
  warps_[warp_index].absent |= 1u << (thread.linear % 32);
  if (!warps_[warp_index].wgmma_pending.empty()) {
    const PendingWgmma& w = warps_[warp_index].wgmma_pending.front();
    fail("sim: block " + block_name() + ", thread " + thread_name(thread) + " exits with " +
         std::to_string(warps_[warp_index].wgmma_pending.size()) + " wgmma of its warp not waited for (issued at " +
         w.site.file + ":" + std::to_string(w.site.line) + "): retire them with wgmma.wait_group first");
    return;
  }
  // The profile: a warp whose lanes have all exited has met for the last time.
  if (checker_.profiler().active() && warps_[warp_index].absent == ~0u) [[unlikely]]
    checker_.warp_exited(warp_index);
  complete_ready_groups(warp_index);
  if (at_barrier_count_ > 0 && at_barrier_count_ == live_threads()) release_block_barrier();
}

void BlockScheduler::make_running(ThreadSlot& thread, Fiber& fiber) {
  thread.state = ThreadState::running;
  thread.fiber = &fiber;
  running_thread_ = &thread;
  running_fiber_ = &fiber;
  threadIdx = thread.index;  // what the kernel (and a debugger) sees from now on
}

Fiber* BlockScheduler::take_idle_fiber() {
  if (idle_.empty()) {
    fibers_.push_back(
        std::make_unique<Fiber>(&BlockScheduler::fiber_entry, this, fiber_stack_bytes()));
    // Room for every fiber in the idle list, so that a fiber retiring itself
    // (fiber_loop) never allocates: it has nowhere to report a failure.
    idle_.reserve(fibers_.size());
    return fibers_.back().get();
  }
  Fiber* fiber = idle_.back();
  idle_.pop_back();
  return fiber;
}

Fiber* BlockScheduler::choose_next() {
  if (!failure_) {
    if (!ready_.empty()) {
      ThreadSlot& thread = *ready_.pop();
      make_running(thread, *thread.fiber);
      return thread.fiber;
    }
    if (next_to_start_ < thread_count_) {
      ThreadSlot& thread = threads_[order_[next_to_start_++]];
      try {
        make_running(thread, *take_idle_fiber());
        return thread.fiber;
      } catch (...) {  // no memory for another stack
        fail(std::current_exception());
      }
    } else if (exited_count_ < thread_count_) {
      try {
        fail(describe_deadlock());
      } catch (...) {  // no memory for the message
        fail(std::current_exception());
      }
    }
  }
  // The block is over, or failed: back to the OS thread's own stack.
  running_thread_ = nullptr;
  running_fiber_ = &host_;
  return &host_;
}

void BlockScheduler::switch_to_next() {
  Fiber* from = running_fiber_;
  Fiber* next = choose_next();
  if (next != from) from->switch_to(*next);
}

// ------------------------------------------------------------ __syncthreads

int BlockScheduler::block_barrier(BarrierKind kind, int predicate, SourceSite site) {
  ThreadSlot& thread = *running_thread_;
  thread.state = ThreadState::at_block_barrier;
  thread.site = site;
  thread.barrier_kind = kind;
  thread.predicate = predicate;
  ++at_barrier_count_;
  // The last thread to arrive releases everyone, itself included, into the
  // ready queue; then all of them run again in schedule order.
  if (at_barrier_count_ == live_threads()) release_block_barrier();
  switch_to_next();
  return thread.barrier_result;
}

void BlockScheduler::release_block_barrier() {
  // Every thread that has not exited is parked at a barrier. They must all be
  // at the same one: threads at two different __syncthreads calls would hang
  // on a GPU (or silently pair up, which is undefined behaviour).
  if (schedule_.order == ScheduleOrder::random) shuffle(order_.data(), thread_count_);
  const ThreadSlot* first = nullptr;
  int count = 0;
  for (unsigned linear : order_) {
    const ThreadSlot& t = threads_[linear];
    if (t.state != ThreadState::at_block_barrier) continue;
    if (first == nullptr) {
      first = &t;
    } else if (!(t.site == first->site) || t.barrier_kind != first->barrier_kind) {
      fail(describe_divergent_barrier(*first, t));
      return;
    }
    count += t.predicate != 0;
  }
  const unsigned arrived = at_barrier_count_;
  int result = 0;
  switch (first->barrier_kind) {
    case BarrierKind::plain: result = 0; break;
    case BarrierKind::count: result = count; break;
    case BarrierKind::all: result = static_cast<unsigned>(count) == arrived; break;
    case BarrierKind::any: result = count > 0; break;
  }
  for (unsigned linear : order_) {
    ThreadSlot& t = threads_[linear];
    if (t.state != ThreadState::at_block_barrier) continue;
    t.barrier_result = result;
    t.state = ThreadState::running;
    ready_.push(&t);
  }
  at_barrier_count_ = 0;
  checker_.barrier_released();
}

void BlockScheduler::add_fmas(std::uint64_t n) {
  if (checker_.profiler().active()) checker_.profiler().add_fmas(n);
}

void BlockScheduler::proxy_fence() {
  if (running_thread_ != nullptr) checker_.proxy_fenced(running_thread_->linear);
}

unsigned BlockScheduler::active_mask() const { return 1u << (running_thread_->linear % 32); }

// ------------------------------------------------------------ sim checks

void BlockScheduler::check_access(std::uintptr_t address, std::size_t size, AccessKind kind,
                                  const void* pc, bool async_proxy) {
  if (!checker_.active() || running_thread_ == nullptr || failure_) return;
  std::exception_ptr stop;
  try {
    std::unique_ptr<Finding> finding =
        checker_.access(address, size, kind, pc, running_thread_->linear, async_proxy);
    if (!finding) return;
    stop = std::make_exception_ptr(std::move(*finding));
  } catch (...) {  // no memory for the checker's state
    stop = std::current_exception();
  }
  // Like a GPU fault: this thread goes no further. Its fiber is abandoned and
  // restarted with the block's other parked fibers (run_block).
  fail(stop);
  switch_to_next();
}

}  // namespace convkit::sim::detail
