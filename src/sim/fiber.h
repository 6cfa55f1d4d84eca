#pragma once
// Fibers: the execution vehicles of CUDA threads under sim.
//
// A fiber is a context plus its own stack. The scheduler runs one CUDA thread
// on a fiber until the thread blocks; a fiber whose thread finished without
// blocking picks up the next thread on the same stack ("direct mode"), so a
// barrier-free block needs just one fiber. Fibers live in a pool per OS thread
// and are reused across blocks and launches.
//
// Stacks are mmap'd with an inaccessible guard page below them: a stack
// overflow (deep recursion, a huge local array in a kernel) faults at once with
// SIGSEGV instead of silently corrupting a neighbour.
//
// Under AddressSanitizer every switch is announced with
// __sanitizer_start_switch_fiber/__sanitizer_finish_switch_fiber; without that,
// ASan believes the program jumped into the middle of a foreign stack and
// reports false stack errors.
#include <cstddef>
#include <memory>

#include "sim/context.h"

namespace convkit::sim::detail {

// Usable bytes per fiber stack: 64 KiB, or CONVKIT_SIM_STACK_KIB if set.
std::size_t fiber_stack_bytes();

// An anonymous mapping: one PROT_NONE guard page, then the usable stack.
class FiberStack {
 public:
  explicit FiberStack(std::size_t usable_bytes);
  ~FiberStack();
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;

  void* low() const { return usable_low_; }
  std::size_t size() const { return usable_bytes_; }

 private:
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
  void* usable_low_ = nullptr;
  std::size_t usable_bytes_ = 0;
};

class Fiber {
 public:
  // Stands for the calling OS thread's own stack: the context that starts the
  // first fiber of a block and gets control back when the block is over.
  Fiber();
  // A new fiber that runs entry(argument) when first switched to.
  Fiber(ContextEntry entry, void* argument, std::size_t stack_bytes);
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Suspends this fiber, which must be the one running, and resumes `to`.
  // Returns when another fiber switches back here.
  void switch_to(Fiber& to);

  // Must be the first thing an entry function does: completes the ASan
  // bookkeeping of the switch that started the fiber.
  static void on_first_entry();

  // Abandons whatever the fiber was doing (its frames are dropped without
  // unwinding) so that the next switch to it starts entry(argument) afresh.
  // Used when a block fails and its parked threads will never resume.
  void restart();

  // Forgets the redzones that abandoned frames of instrumented code left on
  // this fiber's stack (ASan's, or the sim checks' shadow.h), after its frames
  // were dropped by restart() or unwound by an exception.
  void forget_frames();
  // The same for the frames between `address` and the top of the stack: on an
  // OS thread's own stack, frames that an exception unwound may have left
  // redzones where live frames now keep their variables.
  void forget_frames_above(const void* address);

 private:
  Context context_;
  std::unique_ptr<FiberStack> stack_;  // null for the OS thread's own stack
  const void* stack_low_ = nullptr;    // bounds reported to ASan
  std::size_t stack_bytes_ = 0;
  void* asan_fake_stack_ = nullptr;  // ASan's per-fiber fake stack, saved while suspended
  ContextEntry entry_ = nullptr;
  void* argument_ = nullptr;
};

}  // namespace convkit::sim::detail
