#pragma once
// The sim performance model inside the blocks that one OS thread runs: it
// keeps each thread's memory accesses since its warp last met, and when the
// lanes of a warp meet it turns them into warp requests and counts them
// (sectors, bank-conflict ways, active lanes). See convkit/sim/profile.h.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "convkit/sim/profile.h"

namespace convkit::sim::detail {

enum class AccessKind : std::uint8_t;

class BlockProfiler {
 public:
  // `sink` is null when the launch is not profiled; it outlives the launch.
  void begin_launch(KernelProfile* sink, unsigned thread_count);
  bool active() const { return sink_ != nullptr; }

  void begin_block(unsigned thread_count);
  void record(unsigned thread, const void* pc, std::uintptr_t address, std::size_t size, AccessKind kind,
              bool shared);
  void add_fmas(std::uint64_t n) { sink_->fmas += n; }
  void add_tensor_fmas(bool bf16, std::uint64_t n) { (bf16 ? sink_->bf16_fmas : sink_->tf32_fmas) += n; }
  // A warp's share of one wgmma's operand reads (wgmma.cpp): one request of
  // `bytes`, in conflict-free 128-byte wavefronts, which is what the
  // swizzled layouts are for; the async proxy's banking is not modelled.
  void add_async_shared_load(std::uint64_t bytes) {
    RequestCounts& c = sink_->shared_load;
    ++c.requests;
    c.lanes += 32;
    c.bytes += bytes;
    c.unique_bytes += bytes;
    c.wavefronts += (bytes + 127) / 128;
    c.max_ways = c.max_ways > 1 ? c.max_ways : 1;
  }
  // A __syncthreads completed: every warp met.
  void barrier();
  // A warp built-in completed; `whole_warp`: every lane that has not exited
  // took part, so the warp met.
  void warp_builtin(unsigned warp, bool whole_warp);
  // Every lane of the warp has exited.
  void warp_exited(unsigned warp) { flush_warp(warp); }
  void end_block();

 private:
  struct Record {
    const void* pc;
    std::uintptr_t address;
    std::uint32_t size;
    AccessKind kind;
    bool shared;
  };
  // One access placed in its warp request: the k-th at `pc` of its lane.
  struct Issued {
    const void* pc;
    std::uint32_t k;
    std::uint32_t lane;
    const Record* record;
  };
  void flush_warp(unsigned warp);
  void count_request(const Issued* first, const Issued* last);
  RequestCounts& counts_for(const Record& r);

  KernelProfile* sink_ = nullptr;
  unsigned thread_count_ = 0;
  std::vector<std::vector<Record>> trace_;  // per thread, since its warp last met
  // Scratch, kept to reuse its memory.
  std::vector<Issued> issued_;
  std::vector<std::pair<const void*, std::uint32_t>> seen_;  // per lane: pc, accesses so far
  std::vector<std::uint64_t> units_;                         // sectors or words of one request
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> spans_;  // [begin, end) of its lanes' accesses
};

}  // namespace convkit::sim::detail
