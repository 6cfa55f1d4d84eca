// The sim checks inside a block. See block_checker.h.
#include "sim/check/block_checker.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>

#include "convkit/core/error.h"
#include "sim/check/shadow.h"

namespace convkit::sim::detail {
namespace {

std::string hex(std::uintptr_t address) {
  std::ostringstream os;
  os << reinterpret_cast<const void*>(address);
  return os.str();
}

std::string index_text(uint3 i) { return convkit::detail::concat("(", i.x, ",", i.y, ",", i.z, ")"); }

const char* verb(AccessKind kind) {
  switch (kind) {
    case AccessKind::read: return "reads";
    case AccessKind::write: return "writes";
    case AccessKind::atomic: return "atomically updates";
  }
  return "?";
}

// Where [address, address + size) lies relative to the region, in bytes.
std::string offset_text(const Region& r, std::uintptr_t address, std::size_t size) {
  const auto offset = static_cast<long long>(address) - static_cast<long long>(r.begin);
  if (address < r.begin) {
    return convkit::detail::concat("offset ", offset, " of ", r.describe(), " (", r.begin - address,
                                   " bytes before its start)");
  }
  if (address + size > r.end()) {
    return convkit::detail::concat("offset ", offset, " of ", r.describe(), " (", address + size - r.end(),
                                   " bytes past its end)");
  }
  return convkit::detail::concat("offset ", offset, " of ", r.describe());
}

// Bit i set: byte i of a word touched by [address, address + size).
std::uint8_t byte_mask(std::uintptr_t word_begin, std::uintptr_t address, std::size_t size) {
  const std::uintptr_t lo = std::max(word_begin, address);
  const std::uintptr_t hi = std::min(word_begin + kWordBytes, address + size);
  std::uint8_t mask = 0;
  for (std::uintptr_t b = lo; b < hi; ++b) mask |= static_cast<std::uint8_t>(1u << (b - word_begin));
  return mask;
}

}  // namespace

BlockChecker::~BlockChecker() {
  mark_static_shared(Marking::none);
  for (const auto& region : static_shared_) free_guarded(*region);
}

BlockChecker::Marking BlockChecker::wanted_marking() const {
  if (!active()) return Marking::none;
  const Checks& c = launch_->checks();
  return c.racecheck || c.initcheck || launch_->profile() != nullptr ? Marking::tracked : Marking::bounds;
}

void BlockChecker::mark_static_shared(Marking marking) {
  if (marking == static_marking_) return;
  for (const auto& region : static_shared_) {
    region->tracked = marking == Marking::tracked;
    if (marking == Marking::none) {
      unmark_region(*region);
    } else {
      mark_region(*region);
    }
  }
  static_marking_ = marking;
}

void BlockChecker::begin_launch(LaunchChecks* launch, unsigned thread_count) {
  launch_ = launch;
  if (active() && launch_->checks().racecheck) {
    clocks_.resize(thread_count);
    proxy_fences_.resize(thread_count);
  } else {
    proxy_fences_.clear();
  }
  profiler_.begin_launch(active() ? launch_->profile() : nullptr, thread_count);
}

void BlockChecker::begin_block(uint3 block_index, unsigned char* dynamic_shared, std::size_t dynamic_bytes) {
  mark_static_shared(wanted_marking());
  if (!active()) return;
  block_index_ = block_index;
  serial_ = launch_->begin_block(block_index);
  profiler_.begin_block(launch_->block_dim().x * launch_->block_dim().y * launch_->block_dim().z);
  ++epoch_;
  if (launch_->checks().racecheck) {
    std::fill(clocks_.begin(), clocks_.end(), std::array<std::uint32_t, 32>{});
    std::fill(proxy_fences_.begin(), proxy_fences_.end(), std::uint16_t{0});
  }
  Region& d = dynamic_shared_;
  d.begin = reinterpret_cast<std::uintptr_t>(dynamic_shared);
  d.bytes = dynamic_bytes;
  d.guard_before = d.guard_after = kSharedGuard;
  d.kind = RegionKind::dynamic_shared;
  d.tracked = static_marking_ == Marking::tracked;
  // The words of the previous block's buffer belong to another block run,
  // which racecheck and initcheck tell apart by serial: no need to clear them.
  if (!d.words.empty()) d.words.resize((dynamic_bytes + kWordBytes - 1) / kWordBytes);
  mark_region(d);
  dynamic_live_ = true;
}

void BlockChecker::end_block() {
  profiler_.end_block();
  if (!dynamic_live_) return;
  unmark_region(dynamic_shared_);  // the buffer goes back to the heap
  dynamic_live_ = false;
}

void BlockChecker::warp_synced(unsigned warp, unsigned lanes, unsigned absent) {
  profiler_.warp_builtin(warp, (lanes | absent) == ~0u);
  if (!active() || !launch_->checks().racecheck) return;
  std::array<std::uint32_t, 32>* lane_clocks = &clocks_[warp * 32];
  std::array<std::uint32_t, 32> joined{};
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (((lanes >> lane) & 1u) == 0) continue;
    ++lane_clocks[lane][lane];
    for (unsigned i = 0; i < 32; ++i) joined[i] = std::max(joined[i], lane_clocks[lane][i]);
  }
  for (unsigned lane = 0; lane < 32; ++lane) {
    if ((lanes >> lane) & 1u) lane_clocks[lane] = joined;
  }
}

void* BlockChecker::static_shared_storage(std::size_t bytes, const char* file, int line) {
  constexpr std::size_t kAlign = 64;  // as much as any CUDA type asks for
  std::unique_ptr<Region> region = allocate_guarded(bytes, kSharedGuard, kAlign, RegionKind::static_shared);
  region->file = file;
  region->line = line;
  region->tracked = static_marking_ == Marking::tracked;
  if (static_marking_ != Marking::none) mark_region(*region);
  static_shared_.push_back(std::move(region));
  return reinterpret_cast<void*>(static_shared_.back()->begin);
}

Region* BlockChecker::find_region(std::uintptr_t address) {
  if (dynamic_live_ && dynamic_shared_.within_guards(address)) return &dynamic_shared_;
  for (const auto& region : static_shared_) {
    if (region->within_guards(address)) return region.get();
  }
  return find_global_region(address);
}

uint3 BlockChecker::thread_index(unsigned linear) const {
  const dim3 b = launch_->block_dim();
  return uint3{linear % b.x, linear / b.x % b.y, linear / (b.x * b.y)};
}

Finding& BlockChecker::describe_access(Finding& f, const char* check, std::uintptr_t address,
                                       std::size_t size, AccessKind kind, unsigned thread) {
  return f.text(convkit::detail::concat("sim ", check, ": kernel "))
      .function(launch_->kernel())
      .text(convkit::detail::concat(", block ", index_text(block_index_), ", thread ",
                                    index_text(thread_index(thread)), " ", verb(kind), " ", size, " bytes at ",
                                    hex(address)));
}

std::unique_ptr<Finding> BlockChecker::access(std::uintptr_t address, std::size_t size, AccessKind kind,
                                              const void* pc, unsigned thread, bool async_proxy) {
  const Checks& checks = launch_->checks();
  Region* region = find_region(address);
  if (region == nullptr) {
    // A redzone that the kernel's compiled code put around one of its local arrays.
    if (!checks.memcheck || !is_stack_redzone(shadow_byte(address))) return nullptr;
    auto f = std::make_unique<Finding>();
    describe_access(*f, "memcheck", address, size, kind, thread)
        .text(", out of bounds: past a local array, into the guard zone around it on the thread's stack, at ")
        .site(pc);
    return f;
  }
  if (address < region->begin || address + size > region->end()) {
    if (!checks.memcheck) return nullptr;
    auto f = std::make_unique<Finding>();
    describe_access(*f, "memcheck", address, size, kind, thread)
        .text(convkit::detail::concat(", out of bounds: ", offset_text(*region, address, size), ", at "))
        .site(pc);
    return f;
  }
  if (!region->tracked) return nullptr;
  if (profiler_.active()) profiler_.record(thread, pc, address, size, kind, region->shared());
  if (region->shared() && checks.initcheck) {
    if (kind != AccessKind::write) {
      if (auto f = check_initialised(*region, address, size, pc, thread)) return f;
    }
    if (kind != AccessKind::read) mark_initialised(*region, address, size);
  }
  if (checks.racecheck) {
    if (async_proxy && region->shared()) {
      if (auto f = check_proxy_fenced(*region, address, size, pc, thread)) return f;
    }
    check_races(*region, address, size, kind, pc, thread);
  }
  return nullptr;
}

std::unique_ptr<Finding> BlockChecker::check_proxy_fenced(Region& region, std::uintptr_t address,
                                                          std::size_t size, const void* pc, unsigned thread) {
  for (std::uintptr_t w = address / kWordBytes * kWordBytes; w < address + size; w += kWordBytes) {
    const Access& write = region.word(w).write;
    if (write.block != serial_ || proxy_fences_[write.thread] != write.proxy_fences) continue;
    auto f = std::make_unique<Finding>();
    describe_access(*f, "racecheck", address, size, AccessKind::read, thread)
        .text(convkit::detail::concat(" (", offset_text(region, address, size),
                                      ") through the async proxy, by wgmma.mma_async at "))
        .site(pc)
        .text(convkit::detail::concat(", but thread ", index_text(thread_index(write.thread)), " wrote it at "))
        .site(write.pc)
        .text(" and has run no fence.proxy.async since: on a GPU the tensor cores may read the bytes as they were "
              "before that write");
    return f;
  }
  return nullptr;
}

std::unique_ptr<Finding> BlockChecker::check_initialised(Region& region, std::uintptr_t address,
                                                         std::size_t size, const void* pc, unsigned thread) {
  // An access wider than a word that finds some of its bytes written reads a
  // struct with padding (a {float, int64} pair, say), which no thread writes.
  std::size_t unwritten = 0;
  for (std::uintptr_t w = address / kWordBytes * kWordBytes; w < address + size; w += kWordBytes) {
    const WordState& word = region.word(w);
    const std::uint8_t written = word.init_block == serial_ ? word.init_bytes : 0;
    const std::uint8_t needed = byte_mask(w, address, size);
    unwritten += static_cast<std::size_t>(std::popcount(static_cast<unsigned>(needed & ~written)));
  }
  if (unwritten == 0 || (size > kWordBytes && unwritten < size)) return nullptr;
  auto f = std::make_unique<Finding>();
  describe_access(*f, "initcheck", address, size, AccessKind::read, thread)
      .text(convkit::detail::concat(" (", offset_text(region, address, size),
                                    ") that no thread of the block has written, at "))
      .site(pc);
  return f;
}

void BlockChecker::mark_initialised(Region& region, std::uintptr_t address, std::size_t size) {
  for (std::uintptr_t w = address / kWordBytes * kWordBytes; w < address + size; w += kWordBytes) {
    WordState& word = region.word(w);
    if (word.init_block != serial_) {
      word.init_block = serial_;
      word.init_bytes = 0;
    }
    word.init_bytes |= byte_mask(w, address, size);
  }
}

RaceContext BlockChecker::race_context(const Access& access) {
  RaceContext c;
  c.block = access.block;
  c.epoch = access.epoch;
  c.launch_first_block = launch_->first_block_serial();
  c.thread = access.thread;
  c.clock = access.clock;
  c.clocks = access.block == serial_ ? clocks_[access.thread].data() : no_clocks_.data();
  c.pc = access.pc;
  c.proxy_fences = access.proxy_fences;
  return c;
}

void BlockChecker::check_races(Region& region, std::uintptr_t address, std::size_t size, AccessKind kind,
                               const void* pc, unsigned thread) {
  const Access me{serial_, epoch_, clocks_[thread][thread % 32], static_cast<std::uint16_t>(thread), pc,
                  proxy_fences_[thread]};
  for (std::uintptr_t w = address / kWordBytes * kWordBytes; w < address + size; w += kWordBytes) {
    WordState& word = region.word(w);
    std::uint32_t value = 0;
    std::memcpy(&value, reinterpret_cast<const void*>(w), std::min<std::size_t>(kWordBytes, region.end() - w));
    // The last reader wrote too (a read-modify-write reported as its read).
    // Only kernel code writes a word within one block run, or global memory
    // within one launch; between them sim poisons shared memory and the host
    // writes global memory.
    const Access reader = word.pending_read;
    const bool same_writers = region.shared() ? reader.block == serial_
                                              : reader.block >= launch_->first_block_serial();
    if (same_writers && value != word.value_at_read) {
      report_conflicts(region, w, reader, true);
    }
    word.pending_read = Access{};
    // Atomics are the sanctioned way for threads to update one word together.
    if (kind == AccessKind::atomic) continue;
    const bool write = kind == AccessKind::write;
    report_conflicts(region, w, me, write);
    if (!write) {
      word.pending_read = me;
      word.value_at_read = value;
    }
  }
}

void BlockChecker::report_conflicts(Region& region, std::uintptr_t w, const Access& access, bool write) {
  conflicts_.clear();
  check_race(region.word(w), race_context(access), write, !region.shared(), conflicts_);
  for (const Conflict& c : conflicts_) {
    launch_->add_hazard(c, access.pc, [&] {
      static const char* const kNames[] = {"read-after-write", "write-after-read", "write-after-write"};
      const bool earlier_wrote = c.hazard != Hazard::write_after_read;
      const uint3 block = access.block == serial_ ? block_index_ : launch_->block_of(access.block);
      const uint3 earlier_block = c.earlier.block == serial_ ? block_index_ : launch_->block_of(c.earlier.block);
      Finding f;
      f.text(convkit::detail::concat(kNames[static_cast<int>(c.hazard)], " hazard at ", hex(w), " (",
                                     offset_text(region, w, kWordBytes), "): thread ",
                                     index_text(thread_index(access.thread)), " of block ", index_text(block),
                                     write ? " writes" : " reads", " at "))
          .site(access.pc)
          .text(convkit::detail::concat(", thread ", index_text(thread_index(c.earlier.thread)), " of block ",
                                        index_text(earlier_block), earlier_wrote ? " wrote" : " read", " at "))
          .site(c.earlier.pc)
          .text(c.across_blocks ? ", in another block of the same launch"
                                : ", with no barrier or warp synchronisation between them");
      return f;
    });
  }
}

}  // namespace convkit::sim::detail
