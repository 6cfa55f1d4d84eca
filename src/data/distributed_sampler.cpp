// The distributed sampler: interleaved shards of one shared epoch order,
// padded by wrapping around to the order's start, cut to an even length, or
// left uneven.
#include "convkit/data/distributed_sampler.h"

#include "convkit/core/error.h"

namespace convkit::data {

void check_shard(const Shard& shard) {
  CK_CHECK(shard.world_size >= 1, "DataLoader: the shard's world_size must be >= 1, got ",
           shard.world_size);
  CK_CHECK(shard.rank >= 0 && shard.rank < shard.world_size, "DataLoader: the shard's rank ",
           shard.rank, " is outside [0, ", shard.world_size, ") for world_size ",
           shard.world_size);
  CK_CHECK(shard.padding == ShardPadding::repeat || shard.padding == ShardPadding::none,
           "DataLoader: unknown ShardPadding ", static_cast<int>(shard.padding));
}

std::int64_t shard_size(std::int64_t n, const Shard& shard, bool drop_last) {
  CK_CHECK(n >= 0, "shard_size: negative dataset size ", n);
  check_shard(shard);
  const std::int64_t w = shard.world_size;
  if (drop_last) return n / w;
  if (shard.padding == ShardPadding::none) return n > shard.rank ? (n - shard.rank + w - 1) / w : 0;
  return (n + w - 1) / w;
}

std::int64_t shard_padding(std::int64_t n, const Shard& shard, bool drop_last) {
  const std::int64_t size = shard_size(n, shard, drop_last);
  const std::int64_t last_position = (size - 1) * shard.world_size + shard.rank;
  return size > 0 && last_position >= n ? 1 : 0;
}

std::vector<std::int64_t> shard_of(const std::vector<std::int64_t>& order, const Shard& shard,
                                   bool drop_last) {
  const auto n = static_cast<std::int64_t>(order.size());
  const std::int64_t size = shard_size(n, shard, drop_last);
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(size));
  for (std::int64_t k = 0; k < size; ++k) {
    // Padding wraps to the order's start (n > 0 here, else size is 0);
    // with fewer samples than ranks it wraps more than once.
    const std::int64_t position = (k * shard.world_size + shard.rank) % n;
    out.push_back(order[static_cast<std::size_t>(position)]);
  }
  return out;
}

}  // namespace convkit::data
