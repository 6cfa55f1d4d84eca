#pragma once
// The pause between two polls of a collective that has not completed (an
// MPI_Test, a communicator's completed()): spin first, since a collective
// between ranks of one machine completes in microseconds, then yield, then
// sleep ever longer up to a bound, so a long wait costs little CPU but is
// still noticed within 200 us.
#include <chrono>
#include <thread>

namespace convkit::dist {

inline void poll_back_off(int polls) {
  if (polls < 64) return;
  if (polls < 1024) {
    std::this_thread::yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(polls < 4096 ? 20 : 200));
}

}  // namespace convkit::dist
