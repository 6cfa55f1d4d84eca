#pragma once
// DataLoader: batches of a Dataset, shuffled per epoch, prepared by worker
// threads ahead of the consumer.
//
// Determinism rule: for a given seed, the contents and order of every batch
// of every epoch are fixed, whatever the number of workers and however the
// threads are scheduled. The order of epoch e is a Philox-driven permutation
// keyed by (seed, e); a sample's augmentation is keyed by (seed, e, dataset
// index). Workers only decide *when* a batch is ready, never what is in it.
//
// Data parallelism: with shard.world_size W > 1 the loader reads only rank
// shard.rank's part of each epoch order (distributed_sampler.h): positions
// rank, rank + W, ... The order is the same on every rank, so the ranks'
// shards are disjoint and step s of all ranks together is step s of one rank
// with W times the batch size. A sample is augmented the same on whichever rank
// reads it, since its key does not involve the rank.
//
// Per sample: dataset.get(i) -> preprocessing.apply_geometry ->
// augmentation -> preprocessing.apply_values. Batches are float32
// [N, C, H, W] images and int64 [N] labels, moved to `device` by the
// consumer's thread.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "convkit/core/device.h"
#include "convkit/core/tensor.h"
#include "convkit/data/augmentation.h"
#include "convkit/data/dataset.h"
#include "convkit/data/distributed_sampler.h"
#include "convkit/data/preprocessing.h"

namespace convkit::data {

struct Batch {
  Tensor images;                      // float32 [N, C, H, W]
  Tensor labels;                      // int64 [N]
  std::vector<std::int64_t> indices;  // dataset indices, in batch order
  // The last `padding` samples repeat samples that another rank reads this
  // epoch: they only even out the shards (several ranks, ShardPadding::repeat,
  // no drop_last). Training uses them like any sample, as PyTorch does;
  // evaluation must leave them out of its sums so no sample counts twice
  // (or read with ShardPadding::none, which has none).
  std::int64_t padding = 0;
  std::int64_t real_size() const { return static_cast<std::int64_t>(indices.size()) - padding; }
};

struct DataLoaderOptions {
  std::int64_t batch_size = 32;
  bool shuffle = true;
  std::uint64_t seed = 0;
  // Drop a final batch smaller than batch_size and, with several ranks, the
  // epoch's last n mod world_size samples, so the shards are even without
  // padding.
  bool drop_last = false;
  int workers = 0;         // 0: batches are prepared on the consumer's thread
  // Batches prepared or being prepared ahead of the consumer, at most.
  std::int64_t max_queue_size = 4;
  Preprocessing preprocessing = Preprocessing::identity();
  Augmentation augmentation;  // off by default
  Device device = kCPU;
  // The part of each epoch this process reads. batch_size is per rank: the
  // job's batch is batch_size x shard.world_size.
  Shard shard;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options);
  // Stops the workers, waiting only for the sample each is preparing.
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Per epoch, of this rank: the same on every rank unless the shard's
  // padding is ShardPadding::none.
  std::int64_t num_batches() const;
  const DataLoaderOptions& options() const { return options_; }
  const Dataset& dataset() const { return *dataset_; }
  // What a checkpoint stores, so predict repeats it.
  const Preprocessing& preprocessing() const { return options_.preprocessing; }
  // [C, H, W] of the batches' images (0 where it varies).
  Shape image_shape() const;

  // Starts (or restarts, abandoning the current one) epoch `epoch`, from its
  // batch `first_batch` (the earlier ones are skipped without being loaded:
  // resuming an interrupted epoch).
  void start_epoch(std::uint64_t epoch, std::int64_t first_batch = 0);
  // The next batch of the current epoch, or nullopt at its end. Call from one
  // thread (the consumer); workers are internal. Before any
  // start_epoch, epoch 0 starts. An exception thrown while preparing a batch
  // (by the dataset or a transform) is rethrown here, unchanged, when that
  // batch is due; the epoch then ends.
  std::optional<Batch> next();
  std::uint64_t epoch() const { return epoch_; }

  // for (Batch& batch : loader.epoch_range(e)) ...
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    explicit Iterator(DataLoader* loader) : loader_(loader) { ++*this; }
    Batch& operator*() { return *current_; }
    Iterator& operator++() {
      current_ = loader_->next();
      if (!current_) loader_ = nullptr;
      return *this;
    }
    bool operator==(const Iterator& other) const { return loader_ == other.loader_; }

   private:
    DataLoader* loader_ = nullptr;
    std::optional<Batch> current_;
  };
  struct EpochRange {
    DataLoader* loader;
    Iterator begin() { return Iterator(loader); }
    Iterator end() { return Iterator(); }
  };
  EpochRange epoch_range(std::uint64_t epoch) {
    start_epoch(epoch);
    return EpochRange{this};
  }

 private:
  struct Ready {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  // nullopt when the loader is being destroyed.
  std::optional<Batch> build_batch(const std::vector<std::int64_t>& indices,
                                   std::uint64_t epoch) const;
  std::vector<std::int64_t> batch_indices(std::int64_t b) const;  // requires the lock or no workers
  std::int64_t padding_in_batch(std::int64_t b) const;
  void worker_loop();
  void end_epoch_locked();

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;

  std::mutex mutex_;
  std::condition_variable work_cv_;   // workers wait for claimable batches
  std::condition_variable ready_cv_;  // the consumer waits for its batch
  bool stop_ = false;
  std::atomic<bool> stopping_{false};  // stop_, readable without the lock
  bool active_ = false;          // an epoch is under way
  bool started_ = false;         // start_epoch has been called
  std::uint64_t epoch_ = 0;
  std::uint64_t generation_ = 0; // bumped per epoch: stale work is dropped
  std::vector<std::int64_t> order_;  // this rank's shard of the epoch order
  std::int64_t next_to_claim_ = 0;
  std::int64_t next_to_consume_ = 0;
  std::map<std::int64_t, Ready> ready_;
  std::vector<std::thread> workers_;
};

// The sample order of `epoch` for a dataset of n examples (identity when
// shuffle is false): a Fisher-Yates permutation driven by Philox(seed, epoch).
std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, std::uint64_t seed,
                                      std::uint64_t epoch);

}  // namespace convkit::data
