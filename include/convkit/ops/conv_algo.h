#pragma once
// How ConvAlgo::automatic becomes a concrete algorithm.
//
// 1. A per-call or per-layer algorithm other than automatic wins.
// 2. Otherwise the global default (set_default_conv_algo) if it is not automatic.
// 3. Otherwise, in benchmark mode (like cudnnFind), every supported algorithm
//    runs forward + backward-data + backward-weights once on random data of the
//    full descriptor (batch included) and the fastest is cached per
//    (device, dtype, descriptor); the cache can be saved to and loaded from a file.
// 4. Otherwise the backend's documented heuristic (conv2d_heuristic).
// With logging on, each first choice for a descriptor is printed to stderr.
// Environment: CONVKIT_CONV_BENCHMARK=1, CONVKIT_CONV_LOG=1 switch the modes on.
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

// The algorithm conv2d will run for these arguments (resolving automatic).
ConvAlgo select_conv_algo(ConvAlgo requested, const Conv2dDesc& desc, DType dtype, Device device);

// The benchmark cache: one line per entry, "device dtype descriptor-fields -> algo".
// save writes a temp file and renames it, so a crash never leaves half a file.
void save_conv_algo_cache(const std::string& path);
// Adds the entries of `path` to the in-memory cache; a malformed line is an
// error naming the file and line.
void load_conv_algo_cache(const std::string& path);
void clear_conv_algo_cache();

}  // namespace convkit
