#pragma once
// The memory the sim checks know: device allocations, each __shared__ array,
// and a block's dynamic shared memory, each with the guard zones around it and,
// once racecheck or initcheck needs it, the state of every 4-byte word.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace convkit::sim::detail {

// One access remembered for racecheck. block == 0 means none.
struct Access {
  std::uint32_t block = 0;   // serial of the block run that made it (BlockChecker)
  std::uint32_t epoch = 0;   // barrier interval within that run
  std::uint32_t clock = 0;   // the thread's own warp clock then (race_check.h)
  std::uint16_t thread = 0;  // linear thread index
  const void* pc = nullptr;  // the kernel code that made it
  // The thread's count of fence.proxy.async then (mod 2^16): a write that
  // wgmma reads must have been followed by one (block_checker.cpp).
  std::uint16_t proxy_fences = 0;
};

// Word size 4: a shared-memory bank word, and what racecheck reports.
inline constexpr std::size_t kWordBytes = 4;

struct WordState {
  Access write;     // the last plain write
  Access reads[2];  // recent reads by two different threads
  // GCC reports a read-modify-write (s[0] += v) once, as the read: the last
  // reported access, when it was a read, and the value the word held then. A
  // changed value at the next access means that reader also wrote.
  Access pending_read;
  std::uint32_t value_at_read = 0;
  std::uint32_t init_block = 0;  // initcheck: the block run that wrote init_bytes
  std::uint8_t init_bytes = 0;   // bit i: byte i of the word written in that run
};

enum class RegionKind : std::uint8_t { global, static_shared, dynamic_shared };

struct Region {
  std::uintptr_t begin = 0;
  std::size_t bytes = 0;
  std::size_t guard_before = 0;
  std::size_t guard_after = 0;
  RegionKind kind = RegionKind::global;
  const char* file = "";  // a __shared__ array's declaration
  int line = 0;
  bool tracked = false;  // the body's shadow sends every access to the checker
  std::vector<WordState> words;

  std::uintptr_t end() const { return begin + bytes; }
  bool within_guards(std::uintptr_t address) const {
    return address + guard_before >= begin && address < end() + guard_after;
  }
  WordState& word(std::uintptr_t address) {
    if (words.empty()) words.resize((bytes + kWordBytes - 1) / kWordBytes);
    return words[(address - begin) / kWordBytes];
  }
  bool shared() const { return kind != RegionKind::global; }
  // "the 4096-byte device allocation at 0x...", "__shared__ array (1088 bytes,
  // declared at gemm.cu:100)", "the block's 512 bytes of dynamic shared memory".
  std::string describe() const;
};

// Heap memory for a region: `bytes` between a guard of `guard` bytes before and
// at least that much after, aligned to `align` (which divides `guard`), zero-
// filled, and not yet marked. Throws when out of memory. Free it with
// free_guarded(), after unmark_region().
std::unique_ptr<Region> allocate_guarded(std::size_t bytes, std::size_t guard, std::size_t align, RegionKind kind);
void free_guarded(const Region& region);

// Lays the region's guard zones and body into the shadow (shadow.h).
void mark_region(const Region& region);
// Clears the shadow of the region and its guards.
void unmark_region(const Region& region);

// Device allocations made while a check was on, by address. Thread-safe.
Region* find_global_region(std::uintptr_t address);
// Makes every device allocation's body tracked or not, for the next launch.
void track_global_regions(bool tracked);

}  // namespace convkit::sim::detail
