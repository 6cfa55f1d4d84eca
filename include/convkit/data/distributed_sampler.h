#pragma once
// The distributed sampler: which part of an epoch one rank of a data-parallel
// job reads (PyTorch's DistributedSampler, cut by interleaving).
//
// Every rank computes the same epoch order (same seed), and rank r of W takes
// positions r, r + W, r + 2W, ... of it. Step s of a rank with batch B then
// holds positions s B W + j W + r (j < B), so step s's batches of all ranks
// together are positions [s B W, (s + 1) B W): exactly step s's batch of one
// rank with batch B W. That is what makes W ranks of B equal one rank of B W.
//
// When W does not divide the epoch's n samples, the shards differ by one
// sample, and a rank with one step fewer would leave the others waiting in a
// collective. So, for training:
//   - ShardPadding::repeat (default): the order is extended to a multiple of
//     W by repeating it from its start, so every rank has ceil(n / W)
//     samples. Fewer than W samples are repeats, at most one per rank, the
//     last of its shard (Batch::padding marks them).
//   - drop_last (DataLoaderOptions): the last n mod W samples of the epoch
//     are left out, so every rank has floor(n / W). This wins over padding.
// For evaluation, where each sample must count once and the ranks meet only
// to sum their totals at the end:
//   - ShardPadding::none: no padding; rank r has the positions < n that are
//     r mod W, ceil((n - r) / W) of them.
#include <cstdint>
#include <vector>

namespace convkit::data {

enum class ShardPadding { repeat, none };

struct Shard {
  int rank = 0;        // in [0, world_size)
  int world_size = 1;  // ranks in the job
  ShardPadding padding = ShardPadding::repeat;
};

// Throws Error unless world_size >= 1 and 0 <= rank < world_size.
void check_shard(const Shard& shard);

// Samples `shard`'s rank reads per epoch of n, padding included.
std::int64_t shard_size(std::int64_t n, const Shard& shard, bool drop_last);

// How many of those samples are padding (0 or 1), always the last ones.
std::int64_t shard_padding(std::int64_t n, const Shard& shard, bool drop_last);

// `shard`'s part of `order` (an epoch order of order.size() samples), in the
// order its rank reads it, padding included.
std::vector<std::int64_t> shard_of(const std::vector<std::int64_t>& order, const Shard& shard,
                                   bool drop_last);

}  // namespace convkit::data
