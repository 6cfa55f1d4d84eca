#pragma once
// Host-side entry points of the sim test kernels (tests/sim/kernels/*.cu).
// The kernels themselves are ordinary CUDA source compiled by g++ against
// convkit/sim/cuda_compat.h, exactly as production kernels are; each function
// here launches one of them with convkit::launch. Plain C++ types only, so the
// test files need not include the CUDA compatibility header.
#include <cstddef>
#include <cstdint>

namespace sim_test_kernels {

struct Dim {
  unsigned x = 1, y = 1, z = 1;
};

// ---- sgemm.cu: C[m][n] = A[m][k] * B[k][n], row-major, 16x16 shared tiles.
// The two barriers of the tiled loop can be left out at compile time.
enum class SgemmBarriers {
  both,                // the correct kernel
  no_sync_after_load,  // threads read the tile before others finished writing it
  no_sync_after_use,   // threads overwrite the tile while others still read it
};
void sgemm_tiled(SgemmBarriers barriers, const float* a, const float* b, float* c, int m, int n,
                 int k);

// ---- async_copy.cu: 64 threads cp.async 2 x 256 floats of src into shared
// memory in two groups (16-byte copies, then 8- and 4-byte ones), elements at
// n_valid and beyond zero-filled, and thread t writes thread t+1's values
// (mod 64) of both rows to out[0..512): out equals src when the kernel is right.
// `poison` first fills the shared rows with -7 (stale data from before).
enum class AsyncCopyMode {
  correct,            // wait_group 0, then __syncthreads
  no_wait,            // no wait_group: the copies never land
  no_barrier,         // the neighbour's copies may not have landed
  wait_keeps_newest,  // wait_group 1: the second group stays in flight
};
void async_copy(const float* src, int n_valid, float* out, AsyncCopyMode mode, bool poison);
// A 16-byte copy to a shared address 4 bytes past a 16-byte boundary.
void async_copy_misaligned(const float* src);

// ---- warp.cu: one warp built-in per thread, every operand chosen per thread
// so that tests can build divergent groups. Indexed by linear thread id of a
// single block of `block` threads.
enum class ShuffleKind { idx, up, down, xor_ };
struct ShuffleLane {
  unsigned mask;  // the mask this lane passes
  ShuffleKind kind;
  int arg;  // srcLane, delta or laneMask
  int width;
  int value;  // the lane's `var`
};
void shuffle(Dim block, const ShuffleLane* lanes, int* results);
// The same with a double operand (8-byte shuffles), value = lanes[i].value + 0.5.
void shuffle_double(Dim block, const ShuffleLane* lanes, double* results);

enum class VoteKind { ballot, any, all, match_any, reduce_add, reduce_min, reduce_max, syncwarp };
struct VoteLane {
  unsigned mask;
  VoteKind kind;
  int value;  // predicate or operand
};
// results[i]: the built-in's result (ballots and matches as unsigned bits).
void vote(Dim block, const VoteLane* lanes, long long* results);

// __activemask() for each thread of a one-warp block.
void active_masks(unsigned* results);

// Misuse that the sim reports: a shuffle width that is not a power of two, a
// lane calling with a mask that leaves it out.
void shuffle_with_width(int width);
void shuffle_with_foreign_mask();
// Even lanes call __shfl_sync, odd lanes __ballot_sync, all with the full mask.
void mixed_warp_builtins();
// 32 threads; even lanes call __syncwarp on one line, odd lanes on another, then
// odd lane l stores what lane l - 1 wrote before the barrier, 10 * (l - 1).
void syncwarp_from_two_sites(int* out);

// ---- barriers.cu
// Each thread with exits[i] != 0 returns at once; the rest call
// __syncthreads_count/_and/_or with preds[i] and store the results.
void barrier_predicates(Dim grid, Dim block, const int* exits, const int* preds, int* counts,
                        int* ands, int* ors);
// The two source lines of a kernel's conflicting calls, recorded by the kernel.
struct SourceLines {
  int first = 0;
  int second = 0;
};
// Threads 0-15 and 16-31 call __syncthreads on different lines (first, second).
void divergent_barrier(SourceLines* lines);
// Lanes 0-15 wait at __syncthreads (first), lanes 16-31 in a shuffle that needs
// them (second).
void shuffle_waits_for_barrier(SourceLines* lines);
// Thread (3,0,0) of block (1,0,0) calls __trap().
void trap_in_one_thread();
// A kernel that calls launch() itself.
void launch_from_kernel();
// __syncthreads() called by host code, outside any kernel.
void syncthreads_outside_kernel();

// ---- atomics.cu: `blocks` x `threads` threads, each adding 1 (or 1.0)
// through atomicAdd on int, unsigned long long, float and double, incrementing
// through an atomicCAS loop, and taking atomicMax/atomicMin of its global index.
struct AtomicTotals {
  int int_sum = 0;
  unsigned long long ull_sum = 0;
  float float_sum = 0.0f;
  double double_sum = 0.0;
  unsigned cas_sum = 0;
  int max_index = -1;
  int min_index = 1 << 30;
  unsigned inc_wrapped = 0;  // atomicInc with limit 9: counts 0..9 and wraps
  unsigned histogram[16] = {};
};
void atomic_totals(unsigned blocks, unsigned threads, AtomicTotals* totals);
// Two one-thread blocks: block 0 waits (bounded) for a flag that block 1 sets,
// so it only succeeds when the two run at the same time. Returns true then.
bool blocks_run_concurrently();

// ---- shared_memory.cu: for each block, whether thread 0 found every byte of
// the dynamic shared memory poisoned (0xFF) on entry, the size it reported,
// whether the pointer was 16-byte aligned, and whether a block-wide sum
// through the shared buffer came out right.
struct SharedProbe {
  int poisoned = 0;
  std::size_t bytes = 0;
  int aligned = 0;
  int sum_ok = 0;
};
// Sets allow_dynamic_shared(kernel, opt_in) first: 0 is no opt-in (48 KB).
void probe_dynamic_shared(unsigned blocks, unsigned threads, std::size_t bytes,
                          SharedProbe* probes, std::size_t opt_in = 0);

// ---- grid.cu: every thread adds 1 to hits[global linear index] and sets
// *bad if it sees an index out of range or blockDim/gridDim differ from the
// launch. Global linear index = block linear index * threads per block +
// thread linear index.
void record_indices(Dim grid, Dim block, unsigned* hits, int* bad);
// One block: each thread appends threadIdx.x to `order` as it starts, and
// again after a __syncthreads, so tests can see the schedule.
void record_order(unsigned threads, unsigned* order_before, unsigned* order_after);

// ---- planted_bugs.cu: one bug each for the sim checks (check_test.cpp); the
// flag gives the correct kernel. Buffers are the caller's; sizes as noted.
void planted_static_shared_overrun(float* out);                     // out[32]
void planted_dynamic_shared_overrun(float* out);                    // out[32]
void planted_global_overrun(float* out, int n);                     // out[n], writes out[n]
void planted_local_overrun(const int* pick, float* out);            // pick[32] in 0..4, out[32]
void planted_lost_update(int* out, unsigned threads, bool use_atomic);  // *out = threads
void planted_neighbour_exchange(int* out, bool barrier);            // out[32]
void planted_warp_sum(const int* in, int* out, bool syncwarp);      // in[32], *out = sum
void planted_uninitialised_read(float* out, bool fill_all);         // out[64]
void planted_blocks_share_a_word(int* out, unsigned blocks, bool use_atomic);

// ---- profile_kernels.cu: kernels whose memory traffic is known by hand, for
// the sim performance model (convkit/sim/profile.h). One float per thread.
void profile_coalesced_copy(const float* in, float* out, unsigned blocks, unsigned threads);
void profile_strided_copy(const float* in, float* out, unsigned blocks, unsigned threads);  // in: 32 per thread
void profile_transpose(const float* in, float* out, bool padded);  // one 32 x 32 tile, one block
void profile_pair_reads(float* out, int pitch);  // one warp of 8-byte shared reads, rows of 36 or 40 floats
void profile_divergent_copy(const float* in, float* out, unsigned blocks, unsigned threads);  // even threads
// out[i] = sum of x[j] * y[j], j < n, with dev::fma.
void profile_dot_products(const float* x, const float* y, float* out, int n, unsigned blocks, unsigned threads);

// ---- mma.cu: one mma.sync per warp of a one-block launch of 32 * warps
// threads; thread t reads in[t] and writes d[4t .. 4t+3]. Lane `exiting_lane`
// (or none, when -1) returns before the mma.
enum class MmaKind { tf32_m16n8k8, bf16_m16n8k16 };
struct MmaRegisters {
  std::uint32_t a[4];
  std::uint32_t b[2];
  float c[4];
};
void mma(MmaKind kind, unsigned warps, const MmaRegisters* in, float* d, int exiting_lane = -1);

// ---- wgmma.cu: one warpgroup (128 threads, one block) copies `image` into
// its dynamic shared memory at byte `offset`, loads its accumulators from c
// (thread t: c[t * n/2 ...]), runs one wgmma.mma_async (tf32 m64nNk8 or bf16
// m64nNk16) on the two descriptors and stores them to d. What happens between
// the issue and the wait:
enum class WgmmaMode {
  plain,             // commit, wait_group 0
  zero_after_issue,  // every thread zeroes the image (and a barrier) before the wait: an error
  two_groups,        // a second wgmma in a second group; d gets the accumulators
                     // after wait_group 1, d2 after wait_group 0
  no_wait,           // commit and exit: an error
  no_barrier,        // no barrier between the image's copy and the wgmma: a race
  no_proxy_fence,    // no fence.proxy.async after the image's copy: an error under racecheck
  no_wgmma_fence,    // no wgmma.fence before the wgmma: an error
  wait_then_issue,   // a second wgmma after wait_group 0 with no wgmma.fence: an error
};
struct WgmmaCall {
  const unsigned char* image = nullptr;
  unsigned image_bytes = 0, offset = 0;
  std::uint64_t desc_a = 0, desc_b = 0;
  int n = 8;
  bool bf16 = false, scale_d = true;
  WgmmaMode mode = WgmmaMode::plain;
};
void wgmma(const WgmmaCall& call, const float* c, float* d, float* d2 = nullptr);

}  // namespace sim_test_kernels
