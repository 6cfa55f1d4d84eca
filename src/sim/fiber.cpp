// Fiber stacks, switching and the AddressSanitizer annotations. See fiber.h.
#include "sim/fiber.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "convkit/core/error.h"
#include "sim/check/shadow.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CONVKIT_SIM_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define CONVKIT_SIM_ASAN 1
#endif

#if defined(CONVKIT_SIM_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace convkit::sim::detail {
namespace {

constexpr std::size_t kDefaultStackBytes = 64 * 1024;

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// The bounds of the calling OS thread's stack, which ASan needs to know when a
// fiber switches back to it.
void current_thread_stack(const void*& low, std::size_t& bytes) {
  pthread_attr_t attributes;
  low = nullptr;
  bytes = 0;
  if (pthread_getattr_np(pthread_self(), &attributes) != 0) return;
  void* address = nullptr;
  std::size_t size = 0;
  if (pthread_attr_getstack(&attributes, &address, &size) == 0) {
    low = address;
    bytes = size;
  }
  pthread_attr_destroy(&attributes);
}

// ASan fiber-switch announcements; no-ops in other builds.
#if defined(CONVKIT_SIM_ASAN)
void announce_switch(void** fake_stack_save, const void* to_low, std::size_t to_bytes) {
  __sanitizer_start_switch_fiber(fake_stack_save, to_low, to_bytes);
}
void finish_switch(void* fake_stack) {
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
}
void forget_stack_state(const void* low, std::size_t bytes) {
  // A restarted fiber's old frames left poisoned redzones behind.
  __asan_unpoison_memory_region(low, bytes);
}
#else
void announce_switch(void**, const void*, std::size_t) {}
void finish_switch(void*) {}
void forget_stack_state(const void*, std::size_t) {}
#endif

}  // namespace

std::size_t fiber_stack_bytes() {
  static const std::size_t bytes = [] {
    const char* text = std::getenv("CONVKIT_SIM_STACK_KIB");
    if (text == nullptr || *text == '\0') return kDefaultStackBytes;
    char* end = nullptr;
    const unsigned long kib = std::strtoul(text, &end, 10);
    CK_CHECK(*end == '\0' && kib >= 16 && kib <= 1024 * 1024, "CONVKIT_SIM_STACK_KIB='", text,
             "': expected a number of KiB from 16 to 1048576");
    return static_cast<std::size_t>(kib) * 1024;
  }();
  return bytes;
}

FiberStack::FiberStack(std::size_t usable_bytes) {
  const std::size_t guard = page_size();
  usable_bytes_ = round_up(usable_bytes, page_size());
  mapping_bytes_ = guard + usable_bytes_;
  // MAP_NORESERVE: only the pages a kernel actually touches cost memory.
  mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  CK_CHECK(mapping_ != MAP_FAILED, "sim: cannot map a ", mapping_bytes_,
           "-byte fiber stack: ", std::strerror(errno));
  // Stacks grow down, so the guard goes at the low end.
  if (mprotect(mapping_, guard, PROT_NONE) != 0) {
    const int error = errno;
    munmap(mapping_, mapping_bytes_);
    CK_FAIL("sim: cannot protect a fiber stack's guard page: ", std::strerror(error));
  }
  usable_low_ = static_cast<char*>(mapping_) + guard;
}

FiberStack::~FiberStack() { munmap(mapping_, mapping_bytes_); }

Fiber::Fiber() { current_thread_stack(stack_low_, stack_bytes_); }

Fiber::Fiber(ContextEntry entry, void* argument, std::size_t stack_bytes)
    : stack_(std::make_unique<FiberStack>(stack_bytes)),
      stack_low_(stack_->low()),
      stack_bytes_(stack_->size()),
      entry_(entry),
      argument_(argument) {
  make_context(context_, stack_->low(), stack_->size(), entry_, argument_);
}

void Fiber::switch_to(Fiber& to) {
  announce_switch(&asan_fake_stack_, to.stack_low_, to.stack_bytes_);
  switch_context(context_, to.context_);
  // Running again: someone switched back to this fiber.
  finish_switch(asan_fake_stack_);
}

void Fiber::on_first_entry() { finish_switch(nullptr); }

void Fiber::restart() {
  CK_CHECK(stack_ != nullptr, "sim: the OS thread's own context cannot be restarted");
  forget_frames();
  asan_fake_stack_ = nullptr;
  make_context(context_, stack_->low(), stack_->size(), entry_, argument_);
}

void Fiber::forget_frames_above(const void* address) {
  const auto low = reinterpret_cast<std::uintptr_t>(address);
  const auto high = reinterpret_cast<std::uintptr_t>(stack_low_) + stack_bytes_;
  if (low < high) shadow_fill(low, high - low, 0);
}

void Fiber::forget_frames() {
  forget_stack_state(stack_low_, stack_bytes_);
  shadow_fill(reinterpret_cast<std::uintptr_t>(stack_low_), stack_bytes_, 0);
}

}  // namespace convkit::sim::detail
