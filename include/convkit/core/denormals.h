#pragma once
// Subnormal ("denormal") floats on the CPU. Arithmetic that produces or
// reads them runs tens of times slower on x86 cores, and a network's
// activations and gradients drift into that range as training goes on:
// fmnist-cnn trained at about 6,000 images/s in its first epoch and 4,000
// from the second on, until denormals were flushed (docs/performance-log.md,
// step 17). Flushing sets them to zero (FTZ: results, DAZ: inputs), which
// changes values below about 1.2e-38 only. torch::set_flush_denormal is the
// same switch, off by default there; TensorFlow runs its CPU kernels with it
// on. convkit's fit() turns it on for the duration of training
// (FitOptions::flush_denormals); elsewhere it is off unless set here.
namespace convkit {

// Turns flushing on or off for the calling thread and every thread of the
// OpenMP pool (the threads convkit's CPU kernels run on). Returns false, and
// changes nothing, where the CPU has no such mode (not x86).
bool set_flush_denormal(bool on);

// Whether the calling thread flushes denormals.
bool flush_denormal_enabled();

// Sets the mode for a scope and restores the calling thread's previous mode
// (on every pool thread) at its end.
class FlushDenormalGuard {
 public:
  explicit FlushDenormalGuard(bool on) : previous_(flush_denormal_enabled()) { set_flush_denormal(on); }
  ~FlushDenormalGuard() { set_flush_denormal(previous_); }
  FlushDenormalGuard(const FlushDenormalGuard&) = delete;
  FlushDenormalGuard& operator=(const FlushDenormalGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace convkit
