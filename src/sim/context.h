#pragma once
// Execution contexts: the saved registers of a suspended fiber, and the switch
// between two of them.
//
// On x86-64 the switch is a few lines of assembly (context_switch.cpp) that
// save only what the calling convention requires a callee to preserve: rbx, rbp,
// r12-r15, the stack pointer, and the SSE (MXCSR) and x87 control words. The
// compiler already saved everything else before the call. Elsewhere it falls
// back to POSIX ucontext, which works on any architecture but makes a
// sigprocmask system call per switch and is about 15-20x slower.
//
// Define CONVKIT_SIM_FORCE_UCONTEXT to use the fallback on x86-64 as well (for
// testing it and for measuring the difference).
#include <cstddef>

#if defined(__x86_64__) && !defined(CONVKIT_SIM_FORCE_UCONTEXT)
#define CONVKIT_SIM_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace convkit::sim::detail {

struct Context {
#if defined(CONVKIT_SIM_ASM_SWITCH)
  // The suspended fiber's stack pointer; everything else is saved on its stack.
  void* stack_pointer = nullptr;
#else
  ucontext_t state{};
#endif
};

using ContextEntry = void (*)(void* argument);

// Prepares `context` so that the first switch to it calls entry(argument) on the
// stack [stack_low, stack_low + stack_bytes). `entry` must never return: a
// fiber ends by switching away for good.
void make_context(Context& context, void* stack_low, std::size_t stack_bytes, ContextEntry entry,
                  void* argument);

// Saves the running context into `from` and resumes `to`. Returns when some
// other context later switches back to `from`.
void switch_context(Context& from, const Context& to);

// Which implementation this build uses, for docs and benchmarks.
const char* context_switch_kind();

}  // namespace convkit::sim::detail
