#pragma once
// The sim backend's sanitizer: what compute-sanitizer checks on a GPU, checked
// on the CPU while a kernel runs.
//
//   memcheck   every access to shared memory (each __shared__ array on its own,
//              and the block's dynamic shared memory) and to device allocations
//              (exact-sized, between guard zones) is bounds-checked; the first
//              access out of bounds stops the launch.
//   racecheck  between two barriers of a block, a shared or global word that one
//              thread writes while another reads or writes it. Lanes of one warp
//              are ordered only by __syncwarp, the *_sync built-ins or a barrier.
//              Atomics are exempt. Conflicts inside a block fail the launch when
//              it ends; conflicts between blocks are reported and the launch
//              goes on (see take_check_warnings). Also: a wgmma operand read
//              of a shared word whose writer has not run fence.proxy.async
//              since writing it stops the launch (convkit/sim/wgmma.h).
//   initcheck  a read of shared memory that no thread of the block has written
//              stops the launch.
//
// Reports name the kernel, block, thread(s), address, the allocation and the
// kernel's source lines. docs/sim.md shows one and says what each check costs.
//
// The process-wide default comes from the environment variable
//   CONVKIT_SIM_CHECK=memcheck,racecheck,initcheck   (or "all"; empty = none)
// read on first use. Tests set it with set_checks() or ScopedChecks.
//
// The checks need the kernels to be built with the sim instrumentation (the
// CMake option CONVKIT_SIM_CHECKS, on by default and off under
// CONVKIT_SANITIZE); asking for a check in a build without it throws.
#include <string>
#include <string_view>
#include <vector>

namespace convkit::sim {

struct Checks {
  bool memcheck = false;
  bool racecheck = false;
  bool initcheck = false;

  bool any() const { return memcheck || racecheck || initcheck; }
  // Parses a comma-separated list of memcheck, racecheck, initcheck, or "all",
  // or "" / "none"; throws convkit::Error naming the accepted words otherwise.
  static Checks parse(std::string_view text);
  static Checks all() { return Checks{true, true, true}; }
  std::string str() const;  // "memcheck,racecheck" or "none"

  friend bool operator==(const Checks&, const Checks&) = default;
};

// The checks of launches from now on (a launch already running keeps its own).
// Device allocations get their guard zones only while a check is on when they
// are made. Throws if a check is asked for in a build without instrumentation.
void set_checks(const Checks& checks);
Checks current_checks();
// Whether this build's kernels carry the instrumentation the checks need.
bool checks_available();

// Reports that did not stop a launch (races between blocks), oldest first; each
// is also printed to stderr when found. Returns them and forgets them.
std::vector<std::string> take_check_warnings();

// Sets checks for the lifetime of the object, then restores the previous ones.
class ScopedChecks {
 public:
  explicit ScopedChecks(const Checks& checks) : previous_(current_checks()) { set_checks(checks); }
  ~ScopedChecks() { set_checks(previous_); }
  ScopedChecks(const ScopedChecks&) = delete;
  ScopedChecks& operator=(const ScopedChecks&) = delete;

 private:
  Checks previous_;
};

}  // namespace convkit::sim
