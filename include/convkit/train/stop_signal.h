#pragma once
// Stopping a training run cleanly from outside: fit() checks a process-wide
// stop request after every step, and when it is set finishes the step, lets
// the callbacks save a resumable checkpoint and flush their logs
// (Callback::on_train_interrupted), and returns History::interrupted.
//
// SignalStopGuard turns SIGINT and SIGTERM into that request while it lives:
// the first signal asks training to stop at the end of the step; a second
// one ends the process at once, by the signal's default action (the shell
// sees "killed by SIGINT"). FitOptions::stop_on_signal installs one for the
// length of fit(); `convkit train` does.
//
//   train::FitOptions options;
//   options.stop_on_signal = true;
//   History h = train::fit(model, opt, loader, options);
//   if (h.interrupted) return 128 + h.interrupted->signal;  // 130 for SIGINT
#include <csignal>

namespace convkit::train {

// Asks fit() to stop at the end of the current step. `signal` is what
// stop_signal() reports (0: not a signal). Async-signal-safe.
void request_stop(int signal = 0) noexcept;
bool stop_requested() noexcept;
// The signal that requested the stop (0 when none did, or none is pending).
int stop_signal() noexcept;
// Withdraws a request (fit() does on entry, so a stale request from an
// earlier run cannot end the next one at its first step).
void clear_stop_request() noexcept;

// Installs the SIGINT and SIGTERM handlers described above and restores the
// previous ones when destroyed. Guards may nest; the innermost wins.
class SignalStopGuard {
 public:
  SignalStopGuard();
  ~SignalStopGuard();
  SignalStopGuard(const SignalStopGuard&) = delete;
  SignalStopGuard& operator=(const SignalStopGuard&) = delete;

 private:
  struct sigaction previous_int_ {}, previous_term_ {};
};

}  // namespace convkit::train
