#pragma once
// How ConvAlgo::automatic becomes a concrete plan: an algorithm for each of
// the three passes, and where the backend runs a numbered kernel family for
// it, that family's version.
//
// 1. A per-call or per-layer algorithm other than automatic wins, for all
//    three passes.
// 2. Otherwise the global default (set_default_conv_algo) if it is not automatic.
// 3. Otherwise, in benchmark mode (like cudnnFind, or PyTorch's
//    cudnn.benchmark), each pass is timed on random data of the full
//    descriptor (batch included) with every supported algorithm and, for
//    each, every version of its kernel family worth timing
//    (Backend::conv2d_kernel_choices: on the GPU the family's default and its
//    later candidates, e.g. the tensor-core conv's versions 3 and 4 under
//    reduced precision). A candidate runs once to warm up, then three times;
//    its fastest run counts. The fastest candidate wins that pass, so forward,
//    backward-data and backward-weights may each run a different algorithm.
//    Winners are cached per (device, dtype, float32 precision, pass,
//    descriptor); the cache can be saved to and loaded from a file. One
//    thread times at a time (timings that share a device skew each other);
//    a thread that waited for another's timing of the same descriptor takes
//    its result, so every thread gets the same plan.
// 4. Otherwise the backend's documented heuristic (conv2d_heuristic), for all
//    three passes.
// With logging on, each first choice for a descriptor is printed to stderr,
// and every benchmark with each candidate's time.
// Environment: CONVKIT_CONV_BENCHMARK=1, CONVKIT_CONV_LOG=1 switch the modes on
// (1 or true; 0, false or unset leave them off; any other value is an Error
// naming the variable, at the first conv).
#include <string>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/device.h"
#include "convkit/core/dtype.h"

namespace convkit {

void set_default_conv_algo(ConvAlgo algo);
ConvAlgo default_conv_algo();
void set_conv_benchmark_mode(bool on);
bool conv_benchmark_mode();
void set_conv_algo_logging(bool on);

// One pass's choice. kernel_version 0 leaves the family's version to the
// process (kernel_versions.h); otherwise the pass runs under a
// ScopedKernelVersion(kernel_family, kernel_version), unless the user pinned
// that family (set_kernel_version or CONVKIT_KERNEL_<FAMILY>): a pin
// outranks any plan.
struct ConvPassChoice {
  ConvAlgo algo = ConvAlgo::automatic;
  std::string kernel_family;
  int kernel_version = 0;
};

struct ConvPlan {
  ConvPassChoice forward, backward_data, backward_weights;
  const ConvPassChoice& at(ConvPass pass) const;
  ConvPassChoice& at(ConvPass pass);
};

// The plan conv2d will run for these arguments (resolving automatic).
ConvPlan select_conv_plan(ConvAlgo requested, const Conv2dDesc& desc, DType dtype, Device device);

// The benchmark cache: one line per pass and descriptor,
//   "device dtype precision pass descriptor-fields workspace_limit -> algo [family version]"
// (what a kernel version can run depends on the workspace limit too). A line
// of the older form "device dtype descriptor-fields -> algo" loads as that
// algorithm for all three passes at precision highest and the default
// workspace limit.
// save writes a temp file and renames it, so a crash never leaves half a file.
void save_conv_algo_cache(const std::string& path);
// Adds the entries of `path` to the in-memory cache; a malformed line is an
// error naming the file and line.
void load_conv_algo_cache(const std::string& path);
void clear_conv_algo_cache();

}  // namespace convkit
