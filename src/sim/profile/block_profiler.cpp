// Warp requests from per-thread traces. See block_profiler.h.
#include "sim/profile/block_profiler.h"

#include <algorithm>
#include <array>

#include "sim/check/block_checker.h"

namespace convkit::sim::detail {
namespace {

constexpr std::uint64_t kSectorBytes = 32;
constexpr std::uint64_t kBankBytes = 4;
constexpr std::uint64_t kBanks = 32;

}  // namespace

void BlockProfiler::begin_launch(KernelProfile* sink, unsigned thread_count) {
  sink_ = sink;
  thread_count_ = thread_count;
  if (active()) trace_.resize(thread_count);
}

void BlockProfiler::begin_block(unsigned thread_count) {
  if (!active()) return;
  for (auto& t : trace_) t.clear();
  sink_->blocks += 1;
  sink_->threads += thread_count;
}

void BlockProfiler::record(unsigned thread, const void* pc, std::uintptr_t address, std::size_t size,
                           AccessKind kind, bool shared) {
  trace_[thread].push_back(Record{pc, address, static_cast<std::uint32_t>(size), kind, shared});
}

void BlockProfiler::barrier() {
  if (!active()) return;
  sink_->barriers += 1;
  for (unsigned w = 0; w * 32 < thread_count_; ++w) flush_warp(w);
}

void BlockProfiler::warp_builtin(unsigned warp, bool whole_warp) {
  if (!active()) return;
  sink_->warp_builtins += 1;
  if (whole_warp) flush_warp(warp);
}

void BlockProfiler::end_block() {
  if (!active()) return;
  for (unsigned w = 0; w * 32 < thread_count_; ++w) flush_warp(w);
}

// Lanes run the same code in step between meetings, so the k-th access a lane
// makes at one code address is issued with the k-th of every other lane there:
// one warp request. A lane that skips an access (a branch it does not take) is
// simply absent from that request.
void BlockProfiler::flush_warp(unsigned warp) {
  if (!active()) return;
  issued_.clear();
  const unsigned first = warp * 32;
  const unsigned end = std::min(thread_count_, first + 32);
  for (unsigned t = first; t < end; ++t) {
    seen_.clear();
    for (const Record& r : trace_[t]) {
      auto it = std::find_if(seen_.begin(), seen_.end(), [&](const auto& s) { return s.first == r.pc; });
      if (it == seen_.end()) {
        seen_.emplace_back(r.pc, 0);
        it = seen_.end() - 1;
      }
      issued_.push_back(Issued{r.pc, it->second++, t - first, &r});
    }
  }
  std::sort(issued_.begin(), issued_.end(), [](const Issued& a, const Issued& b) {
    return a.pc != b.pc ? std::less<const void*>{}(a.pc, b.pc) : a.k != b.k ? a.k < b.k : a.lane < b.lane;
  });
  for (std::size_t i = 0; i < issued_.size();) {
    std::size_t j = i + 1;
    while (j < issued_.size() && issued_[j].pc == issued_[i].pc && issued_[j].k == issued_[i].k) ++j;
    count_request(&issued_[i], &issued_[j]);
    i = j;
  }
  for (unsigned t = first; t < end; ++t) trace_[t].clear();
}

RequestCounts& BlockProfiler::counts_for(const Record& r) {
  switch (r.kind) {
    case AccessKind::read: return r.shared ? sink_->shared_load : sink_->global_load;
    case AccessKind::write: return r.shared ? sink_->shared_store : sink_->global_store;
    case AccessKind::atomic: break;
  }
  return r.shared ? sink_->shared_atomic : sink_->global_atomic;
}

void BlockProfiler::count_request(const Issued* first, const Issued* last) {
  const Record& lead = *first->record;
  RequestCounts& c = counts_for(lead);
  c.requests += 1;
  c.lanes += static_cast<std::uint64_t>(last - first);
  units_.clear();
  spans_.clear();
  const std::uint64_t unit = lead.shared ? kBankBytes : kSectorBytes;
  for (const Issued* i = first; i != last; ++i) {
    const Record& r = *i->record;
    c.bytes += r.size;
    spans_.emplace_back(r.address, r.address + r.size);
    for (std::uint64_t u = r.address / unit; u <= (r.address + r.size - 1) / unit; ++u) units_.push_back(u);
  }
  std::sort(spans_.begin(), spans_.end());
  std::uintptr_t covered_to = 0;
  for (const auto& [begin, end] : spans_) {
    if (end > covered_to) c.unique_bytes += end - std::max(begin, covered_to);
    covered_to = std::max(covered_to, end);
  }
  std::sort(units_.begin(), units_.end());
  units_.erase(std::unique(units_.begin(), units_.end()), units_.end());
  if (!lead.shared) {
    c.sectors += units_.size();
    return;
  }
  // A wide access is served in phases of 128 bytes: half-warps for 8 bytes a
  // lane, quarter-warps for 16, each phase on its own. Within a phase each
  // bank serves one distinct word per wavefront; lanes reading the same word
  // share it (broadcast). So 8-byte reads whose lanes 0 and 16 meet in a bank
  // cost nothing extra, and two lanes of one half-warp meeting there do.
  const std::uint32_t phase_lanes = lead.size >= 16 ? 8 : lead.size >= 8 ? 16 : 32;
  std::uint32_t ways_sum = 0, needed_sum = 0, worst = 0;
  for (const Issued* p = first; p != last;) {
    const std::uint32_t phase = p->lane / phase_lanes;
    const Issued* end = p;
    units_.clear();
    for (; end != last && end->lane / phase_lanes == phase; ++end) {
      const Record& r = *end->record;
      for (std::uint64_t u = r.address / unit; u <= (r.address + r.size - 1) / unit; ++u) units_.push_back(u);
    }
    std::sort(units_.begin(), units_.end());
    units_.erase(std::unique(units_.begin(), units_.end()), units_.end());
    std::array<std::uint32_t, kBanks> per_bank{};
    for (std::uint64_t word : units_) ++per_bank[word % kBanks];
    const std::uint32_t ways = std::max(1u, *std::max_element(per_bank.begin(), per_bank.end()));
    ways_sum += ways;
    worst = std::max(worst, ways);
    needed_sum += std::max(1u, static_cast<std::uint32_t>((units_.size() + kBanks - 1) / kBanks));
    p = end;
  }
  c.wavefronts += ways_sum;
  c.conflict_wavefronts += ways_sum - needed_sum;
  c.max_ways = std::max(c.max_ways, worst);
}

}  // namespace convkit::sim::detail
