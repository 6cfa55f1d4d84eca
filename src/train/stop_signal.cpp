#include "convkit/train/stop_signal.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace convkit::train {

namespace {

// Lock-free atomics are the only shared state a signal handler may touch.
std::atomic<int> g_requests{0};
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void write_stderr(const char* text) noexcept {
  // write(2) is async-signal-safe; stdio is not. A short write loses only a message.
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

void on_signal(int signal) {
  if (g_requests.fetch_add(1) == 0) {
    g_signal.store(signal);
    write_stderr(
        "\nconvkit: stopping at the end of this step (a checkpoint is saved); send the signal "
        "again to exit at once\n");
    return;
  }
  // The second signal: the default action, so the parent sees the signal.
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

void request_stop(int signal) noexcept {
  g_signal.store(signal);
  g_requests.fetch_add(1);
}

bool stop_requested() noexcept { return g_requests.load(std::memory_order_relaxed) > 0; }

int stop_signal() noexcept { return stop_requested() ? g_signal.load() : 0; }

void clear_stop_request() noexcept {
  g_requests.store(0);
  g_signal.store(0);
}

SignalStopGuard::SignalStopGuard() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: a read or write the signal interrupts resumes, so no I/O
  // path needs to handle EINTR for the stop to be clean.
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
}

SignalStopGuard::~SignalStopGuard() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
}

}  // namespace convkit::train
