// The distributed sampler: shards of one shared epoch order, through the
// DataLoader a rank of a data-parallel job uses.
#include <convkit/data/data_loader.h>
#include <convkit/data/distributed_sampler.h>

#include <algorithm>
#include <set>
#include <utility>

#include "data_files.h"

namespace convkit::testing {
namespace {

using data::Batch;
using data::DataLoader;
using data::DataLoaderOptions;

// Example i: a [1, 4, 4] image of values 16 i + k, label i % 3.
std::shared_ptr<const data::Dataset> numbered(std::int64_t n) {
  std::vector<float> pixels(static_cast<std::size_t>(n * 16));
  for (std::size_t k = 0; k < pixels.size(); ++k) pixels[k] = static_cast<float>(k);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) labels[static_cast<std::size_t>(i)] = i % 3;
  return std::make_shared<data::TensorDataset>(from_vector(pixels, Shape{n, 1, 4, 4}),
                                               from_vector(labels, Shape{n}, TensorOptions(DType::int64)),
                                               3);
}

// One rank's epoch, batch by batch.
struct RankEpoch {
  std::vector<std::vector<std::int64_t>> indices;
  std::vector<std::int64_t> padding;
  std::vector<std::vector<float>> images;
  std::vector<std::vector<std::int64_t>> labels;
};

RankEpoch read_epoch(DataLoader& loader, std::uint64_t epoch) {
  RankEpoch r;
  for (Batch& b : loader.epoch_range(epoch)) {
    EXPECT_EQ(b.labels.numel(), static_cast<std::int64_t>(b.indices.size()));
    r.indices.push_back(b.indices);
    r.padding.push_back(b.padding);
    r.images.push_back(b.images.to_vector<float>());
    r.labels.push_back(b.labels.to_vector<std::int64_t>());
  }
  EXPECT_EQ(static_cast<std::int64_t>(r.indices.size()), loader.num_batches());
  return r;
}

DataLoaderOptions shard_options(std::int64_t batch, std::uint64_t seed, bool drop_last, int rank,
                                int world, data::ShardPadding padding = data::ShardPadding::repeat) {
  DataLoaderOptions o;
  o.batch_size = batch;
  o.seed = seed;
  o.drop_last = drop_last;
  o.shard = data::Shard{rank, world, padding};
  return o;
}

data::Augmentation flips_and_shifts() {
  data::Augmentation a;
  a.horizontal_flip = true;
  a.vertical_flip = true;
  a.crop.padding = 1;
  return a;
}

TEST(DistributedSampler, ShardSizesAndPadding) {
  using data::Shard;
  constexpr auto repeat = data::ShardPadding::repeat;
  constexpr auto none = data::ShardPadding::none;
  EXPECT_EQ(data::shard_size(10, Shard{0, 4, repeat}, false), 3);
  EXPECT_EQ(data::shard_size(10, Shard{3, 4, repeat}, true), 2);
  EXPECT_EQ(data::shard_size(12, Shard{1, 4, repeat}, false), 3);
  EXPECT_EQ(data::shard_size(0, Shard{2, 3, repeat}, false), 0);
  EXPECT_EQ(data::shard_size(2, Shard{4, 5, repeat}, false), 1);
  EXPECT_EQ(data::shard_size(2, Shard{4, 5, repeat}, true), 0);
  // 10 over 4 ranks, padded to 12: positions 10 and 11 (ranks 2 and 3) repeat;
  // unpadded, ranks 2 and 3 have one sample fewer.
  const std::int64_t pads[] = {0, 0, 1, 1};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(data::shard_padding(10, Shard{r, 4, repeat}, false), pads[r]) << r;
    EXPECT_EQ(data::shard_padding(10, Shard{r, 4, repeat}, true), 0) << r;
    EXPECT_EQ(data::shard_padding(10, Shard{r, 4, none}, false), 0) << r;
    EXPECT_EQ(data::shard_size(10, Shard{r, 4, none}, false), 3 - pads[r]) << r;
    EXPECT_EQ(data::shard_size(10, Shard{r, 4, none}, true), 2) << r;
  }
  EXPECT_EQ(data::shard_size(2, Shard{3, 5, none}, false), 0);
  const std::vector<std::int64_t> order = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  EXPECT_EQ(data::shard_of(order, Shard{2, 4, repeat}, false), (std::vector<std::int64_t>{7, 3, 9}));
  EXPECT_EQ(data::shard_of(order, Shard{3, 4, repeat}, false), (std::vector<std::int64_t>{6, 2, 8}));
  EXPECT_EQ(data::shard_of(order, Shard{3, 4, repeat}, true), (std::vector<std::int64_t>{6, 2}));
  EXPECT_EQ(data::shard_of(order, Shard{3, 4, none}, false), (std::vector<std::int64_t>{6, 2}));
  EXPECT_EQ(data::shard_of(order, Shard{1, 4, none}, false), (std::vector<std::int64_t>{8, 4, 0}));
  // Fewer samples than ranks: the order wraps around as often as needed.
  EXPECT_EQ(data::shard_of({4, 5}, Shard{4, 5, repeat}, false), (std::vector<std::int64_t>{4}));
  EXPECT_TRUE(data::shard_of({}, Shard{1, 3, repeat}, false).empty());
}

// For every size, world size, padding mode, seed and epoch: the ranks take
// the same number of steps; their real samples are disjoint and are the
// epoch order's first positions (all of it when padded); padding is marked.
TEST(DistributedSampler, ShardsAreDisjointAndCoverTheEpoch) {
  for (std::int64_t n : {1, 2, 5, 7, 12, 23}) {
    auto ds = numbered(n);
    for (int world = 1; world <= 5; ++world) {
      for (auto [drop_last, padding] : {std::pair{false, data::ShardPadding::repeat},
                                        std::pair{true, data::ShardPadding::repeat},
                                        std::pair{false, data::ShardPadding::none}}) {
        const bool uneven = padding == data::ShardPadding::none && !drop_last;
        for (std::uint64_t seed : {0u, 9u}) {
          for (std::uint64_t epoch : {0u, 1u, 4u}) {
            const std::int64_t batch = 2;
            SCOPED_TRACE(::testing::Message() << "n " << n << " world " << world << " drop_last "
                                              << drop_last << " uneven " << uneven << " seed "
                                              << seed << " epoch " << epoch);
            std::multiset<std::int64_t> real;
            std::int64_t steps = -1, padded = 0;
            for (int rank = 0; rank < world; ++rank) {
              DataLoader loader(ds, shard_options(batch, seed, drop_last, rank, world, padding));
              const RankEpoch e = read_epoch(loader, epoch);
              if (rank == 0) steps = loader.num_batches();
              // Unpadded shards may differ by one sample, hence one step.
              if (uneven) {
                EXPECT_LE(steps - loader.num_batches(), 1) << "rank " << rank;
                EXPECT_GE(steps - loader.num_batches(), 0) << "rank " << rank;
              } else {
                EXPECT_EQ(loader.num_batches(), steps) << "rank " << rank;
              }
              for (std::size_t s = 0; s < e.indices.size(); ++s) {
                const auto& idx = e.indices[s];
                ASSERT_LE(e.padding[s], static_cast<std::int64_t>(idx.size()));
                // Padding only in the final step, and as the batch's tail.
                if (s + 1 < e.indices.size()) {
                  EXPECT_EQ(e.padding[s], 0);
                }
                const auto real_end = idx.end() - e.padding[s];
                real.insert(idx.begin(), real_end);
                padded += e.padding[s];
                for (auto it = idx.begin(); it != idx.end(); ++it) ASSERT_TRUE(*it >= 0 && *it < n);
              }
            }
            const std::vector<std::int64_t> order = data::epoch_order(n, true, seed, epoch);
            const std::int64_t covered =
                drop_last ? steps * batch * world : n;  // drop_last also drops short batches
            EXPECT_EQ(static_cast<std::int64_t>(real.size()), covered);
            EXPECT_EQ(std::set<std::int64_t>(real.begin(), real.end()).size(), real.size())
                << "a sample was read twice";
            EXPECT_EQ(real, std::multiset<std::int64_t>(order.begin(), order.begin() + covered));
            if (drop_last) {
              EXPECT_EQ(padded, 0);
              EXPECT_GE(covered, n - (n % world) - (batch * world - 1));
            } else if (uneven) {
              EXPECT_EQ(padded, 0);
            } else {
              EXPECT_EQ(padded, data::shard_size(n, data::Shard{0, world}, false) * world - n);
            }
          }
        }
      }
    }
  }
}

// Step s's batches of W ranks with batch B, interleaved back (rank r's j-th
// sample is position j W + r of the global batch) and without padding, are
// step s's batch of one rank with batch W B: the same samples, in the same
// order, augmented identically. This is what makes 2 ranks x B/2 train like
// 1 rank x B.
TEST(DistributedSampler, EachStepOfAllRanksIsTheOneRankBatch) {
  for (std::int64_t n : {11, 24, 29}) {
    auto ds = numbered(n);
    for (int world : {2, 3, 4}) {
      for (bool drop_last : {false, true}) {
        const std::int64_t batch = 3;
        SCOPED_TRACE(::testing::Message() << "n " << n << " world " << world << " drop_last "
                                          << drop_last);
        DataLoaderOptions one = shard_options(batch * world, 5, drop_last, 0, 1);
        one.augmentation = flips_and_shifts();
        DataLoader single(ds, one);
        const RankEpoch reference = read_epoch(single, 2);
        std::vector<RankEpoch> ranks;
        for (int rank = 0; rank < world; ++rank) {
          DataLoaderOptions o = shard_options(batch, 5, drop_last, rank, world);
          o.augmentation = flips_and_shifts();
          DataLoader loader(ds, o);
          EXPECT_EQ(loader.num_batches(), single.num_batches());
          ranks.push_back(read_epoch(loader, 2));
        }
        for (std::size_t s = 0; s < reference.indices.size(); ++s) {
          std::vector<std::int64_t> indices, labels;
          std::vector<float> images;
          for (std::int64_t j = 0; j < batch; ++j) {
            for (int rank = 0; rank < world; ++rank) {
              const RankEpoch& e = ranks[static_cast<std::size_t>(rank)];
              ASSERT_EQ(e.indices.size(), reference.indices.size());
              const auto& idx = e.indices[s];
              const auto real = static_cast<std::int64_t>(idx.size()) - e.padding[s];
              if (j >= real) continue;
              indices.push_back(idx[static_cast<std::size_t>(j)]);
              labels.push_back(e.labels[s][static_cast<std::size_t>(j)]);
              images.insert(images.end(), e.images[s].begin() + j * 16,
                            e.images[s].begin() + (j + 1) * 16);
            }
          }
          EXPECT_EQ(indices, reference.indices[s]) << "step " << s;
          EXPECT_EQ(labels, reference.labels[s]) << "step " << s;
          EXPECT_EQ(images, reference.images[s]) << "step " << s;
        }
      }
    }
  }
}

TEST(DistributedSampler, WorkersGiveTheSameShard) {
  auto ds = numbered(37);
  for (int rank = 0; rank < 3; ++rank) {
    RankEpoch reference[2];
    for (int workers : {0, 1, 3}) {
      DataLoaderOptions o = shard_options(4, 13, false, rank, 3);
      o.workers = workers;
      o.max_queue_size = 2;
      o.augmentation = flips_and_shifts();
      DataLoader loader(ds, o);
      for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
        const RankEpoch e = read_epoch(loader, epoch);
        if (workers == 0) {
          reference[epoch] = e;
          continue;
        }
        EXPECT_EQ(e.indices, reference[epoch].indices) << rank << ' ' << workers << ' ' << epoch;
        EXPECT_EQ(e.padding, reference[epoch].padding) << rank << ' ' << workers << ' ' << epoch;
        EXPECT_EQ(e.images, reference[epoch].images) << rank << ' ' << workers << ' ' << epoch;
      }
    }
    // 37 over 3 ranks pads to 39: ranks 1 and 2 end with one repeat.
    EXPECT_EQ(reference[0].padding.back(), rank == 0 ? 0 : 1);
  }
}

TEST(DistributedSampler, ResumingMidEpochKeepsTheShard) {
  auto ds = numbered(30);
  DataLoader loader(ds, shard_options(2, 3, false, 1, 4));
  const RankEpoch whole = read_epoch(loader, 1);
  loader.start_epoch(1, 2);
  std::vector<std::vector<std::int64_t>> rest;
  while (auto b = loader.next()) rest.push_back(b->indices);
  EXPECT_EQ(rest, std::vector<std::vector<std::int64_t>>(whole.indices.begin() + 2, whole.indices.end()));
}

TEST(DistributedSampler, BadShardsAreRefused) {
  auto ds = numbered(4);
  EXPECT_ERROR_MENTIONS(DataLoader(ds, shard_options(2, 0, false, 0, 0)), "world_size", "0");
  EXPECT_ERROR_MENTIONS(DataLoader(ds, shard_options(2, 0, false, -1, 2)), "rank -1",
                        "[0, 2)");
  EXPECT_ERROR_MENTIONS(DataLoader(ds, shard_options(2, 0, false, 3, 3)), "rank 3", "[0, 3)");
  EXPECT_ERROR_MENTIONS(data::shard_size(-1, data::Shard{0, 2}, false), "negative");
}

}  // namespace
}  // namespace convkit::testing
