// Switching between fibers: an x86-64 assembly switch, with a ucontext fallback
// for other architectures. See context.h for the interface.
#include <cstdint>

#include "convkit/core/error.h"
#include "sim/context.h"

#if defined(CONVKIT_SIM_ASM_SWITCH)

// A suspended context is just its stack pointer; the registers the SysV ABI
// asks a callee to preserve are pushed on its own stack, below the return
// address of its call to the switch:
//
//   higher addresses   return address (where the suspended code resumes)
//                      rbp, rbx, r12, r13, r14, r15
//   stack_pointer ->   MXCSR (4 bytes), x87 control word (2 bytes), padding
//
// Caller-saved registers need no saving: the compiler assumes the call
// clobbers them, as it does for any call. The floating-point control words are
// callee-saved too (a kernel may change rounding or flush-to-zero).
asm(R"(
        .text
        .p2align 4
        .globl  convkit_sim_switch_stack
        .hidden convkit_sim_switch_stack
        .type   convkit_sim_switch_stack, @function
# void convkit_sim_switch_stack(void** save_sp [rdi], void* resume_sp [rsi])
convkit_sim_switch_stack:
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        subq    $8, %rsp
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
        movq    %rsp, (%rdi)
        movq    %rsi, %rsp
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
        addq    $8, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
        .size   convkit_sim_switch_stack, .-convkit_sim_switch_stack

        .p2align 4
        .globl  convkit_sim_context_start
        .hidden convkit_sim_context_start
        .type   convkit_sim_context_start, @function
# The first switch to a new context "returns" here, with the entry function in
# r13 and its argument in r12 (placed there by make_context). Jumping rather than
# calling leaves the null return address make_context stored on top of the
# stack, so the entry function sees a properly aligned stack and debuggers stop
# the backtrace there.
convkit_sim_context_start:
        movq    %r12, %rdi
        jmpq    *%r13
        .size   convkit_sim_context_start, .-convkit_sim_context_start
)");

extern "C" void convkit_sim_switch_stack(void** save_sp, void* resume_sp);
extern "C" void convkit_sim_context_start();

namespace convkit::sim::detail {

void make_context(Context& context, void* stack_low, std::size_t stack_bytes, ContextEntry entry,
                  void* argument) {
  CK_CHECK(stack_low != nullptr && stack_bytes >= 256, "sim: fiber stack of ", stack_bytes,
           " bytes is too small");
  // The top of the stack, 16-byte aligned as the ABI requires at a call.
  auto top = reinterpret_cast<std::uintptr_t>(stack_low) + stack_bytes;
  top &= ~static_cast<std::uintptr_t>(15);
  auto* slot = reinterpret_cast<std::uint64_t*>(top);

  std::uint16_t x87_control = 0;
  asm volatile("fnstcw %0" : "=m"(x87_control));
  const std::uint64_t fp_control = static_cast<std::uint64_t>(__builtin_ia32_stmxcsr()) |
                                   (static_cast<std::uint64_t>(x87_control) << 32);

  // Pushed in the reverse of the order in which the switch pops them.
  const auto word = [](auto value) { return reinterpret_cast<std::uintptr_t>(value); };
  *--slot = 0;                                 // return address of `entry`: ends every backtrace
  *--slot = word(&convkit_sim_context_start);  // where the switch's `ret` goes
  *--slot = 0;                                 // rbp
  *--slot = 0;                                 // rbx
  *--slot = word(argument);                    // r12
  *--slot = word(entry);                       // r13
  *--slot = 0;                                 // r14
  *--slot = 0;                                 // r15
  *--slot = fp_control;                        // the new fiber starts with its creator's FP modes
  context.stack_pointer = slot;
}

void switch_context(Context& from, const Context& to) {
  convkit_sim_switch_stack(&from.stack_pointer, to.stack_pointer);
}

const char* context_switch_kind() { return "x86-64 assembly"; }

}  // namespace convkit::sim::detail

#else  // ucontext fallback

#include <cerrno>
#include <cstring>

namespace convkit::sim::detail {
namespace {

// makecontext passes only int arguments, so the entry function and its
// argument travel as 32-bit halves.
constexpr int kHalfBits = 32;

void start_context(unsigned entry_high, unsigned entry_low, unsigned arg_high, unsigned arg_low) {
  const auto join = [](unsigned high, unsigned low) {
    return (static_cast<std::uintptr_t>(high) << kHalfBits) | low;
  };
  const auto entry = reinterpret_cast<ContextEntry>(join(entry_high, entry_low));
  entry(reinterpret_cast<void*>(join(arg_high, arg_low)));
}

unsigned high_half(std::uintptr_t v) { return static_cast<unsigned>(v >> kHalfBits); }
unsigned low_half(std::uintptr_t v) { return static_cast<unsigned>(v); }

}  // namespace

void make_context(Context& context, void* stack_low, std::size_t stack_bytes, ContextEntry entry,
                  void* argument) {
  CK_CHECK(getcontext(&context.state) == 0, "sim: getcontext failed: ", std::strerror(errno));
  context.state.uc_stack.ss_sp = stack_low;
  context.state.uc_stack.ss_size = stack_bytes;
  context.state.uc_link = nullptr;  // the entry never returns
  const auto e = reinterpret_cast<std::uintptr_t>(entry);
  const auto a = reinterpret_cast<std::uintptr_t>(argument);
  // void(*)() is the one function type every other may be cast to without a
  // -Wcast-function-type warning; makecontext calls it with the four ints.
  makecontext(&context.state, reinterpret_cast<void (*)()>(&start_context), 4, high_half(e),
              low_half(e), high_half(a), low_half(a));
}

void switch_context(Context& from, const Context& to) {
  CK_CHECK(swapcontext(&from.state, &to.state) == 0,
           "sim: swapcontext failed: ", std::strerror(errno));
}

const char* context_switch_kind() { return "ucontext (swapcontext)"; }

}  // namespace convkit::sim::detail

#endif
