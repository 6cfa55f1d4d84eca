// DataLoader: a pool of workers that claim whole batches in order, within a
// window of max_queue_size batches ahead of the consumer, and hand them back
// by batch number. What a batch contains depends only on (seed, epoch, batch
// number); the threads only change when it is ready.
#include "convkit/data/data_loader.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "convkit/ops/factory.h"
#include "data/keyed_random.h"

namespace convkit::data {

std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, std::uint64_t seed,
                                      std::uint64_t epoch) {
  CK_CHECK(n >= 0, "epoch_order: negative dataset size ", n);
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!shuffle) return order;
  // Fisher-Yates from the back; step i's draw is item i of the shuffle stream.
  for (std::int64_t i = n - 1; i > 0; --i) {
    const detail::KeyedRandom rng(seed, detail::Stream::shuffle, epoch, static_cast<std::uint64_t>(i));
    const auto j = static_cast<std::int64_t>(rng.below(0, static_cast<std::uint64_t>(i + 1)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  CK_CHECK(dataset_ != nullptr, "DataLoader: the dataset is null");
  CK_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be positive, got ",
           options_.batch_size);
  CK_CHECK(options_.workers >= 0, "DataLoader: workers must be >= 0, got ", options_.workers);
  CK_CHECK(options_.max_queue_size >= 1, "DataLoader: max_queue_size must be >= 1, got ",
           options_.max_queue_size);
  check_shard(options_.shard);
  options_.augmentation.validate();
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

DataLoader::~DataLoader() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    stopping_ = true;
  }
  work_cv_.notify_all();
  ready_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

std::int64_t DataLoader::num_batches() const {
  const std::int64_t n = shard_size(dataset_->size(), options_.shard, options_.drop_last);
  const std::int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

Shape DataLoader::image_shape() const {
  Shape s = options_.preprocessing.output_shape(dataset_->image_shape());
  const RandomCrop& crop = options_.augmentation.crop;
  if (crop.height > 0) s[1] = crop.height;
  if (crop.width > 0) s[2] = crop.width;
  return s;
}

void DataLoader::start_epoch(std::uint64_t epoch, std::int64_t first_batch) {
  CK_CHECK(first_batch >= 0 && first_batch <= num_batches(), "DataLoader::start_epoch: first_batch ",
           first_batch, " is outside [0, ", num_batches(), "]");
  std::vector<std::int64_t> order =
      shard_of(epoch_order(dataset_->size(), options_.shuffle, options_.seed, epoch),
               options_.shard, options_.drop_last);
  {
    std::lock_guard lock(mutex_);
    ++generation_;
    epoch_ = epoch;
    order_ = std::move(order);
    ready_.clear();
    next_to_claim_ = first_batch;
    next_to_consume_ = first_batch;
    active_ = true;
    started_ = true;
  }
  work_cv_.notify_all();
}

void DataLoader::end_epoch_locked() {
  active_ = false;
  ++generation_;  // batches still being prepared are dropped when they finish
  ready_.clear();
}

std::vector<std::int64_t> DataLoader::batch_indices(std::int64_t b) const {
  const std::int64_t n = static_cast<std::int64_t>(order_.size());
  const std::int64_t begin = b * options_.batch_size;
  const std::int64_t end = std::min(begin + options_.batch_size, n);
  return std::vector<std::int64_t>(order_.begin() + begin, order_.begin() + end);
}

std::int64_t DataLoader::padding_in_batch(std::int64_t b) const {
  const std::int64_t n = dataset_->size();
  const std::int64_t size = shard_size(n, options_.shard, options_.drop_last);
  const std::int64_t real = size - shard_padding(n, options_.shard, options_.drop_last);
  const std::int64_t begin = b * options_.batch_size;
  const std::int64_t end = std::min(begin + options_.batch_size, size);
  return std::max<std::int64_t>(0, end - std::max(begin, real));
}

std::optional<Batch> DataLoader::build_batch(const std::vector<std::int64_t>& indices,
                                             std::uint64_t epoch) const {
  const Preprocessing& pre = options_.preprocessing;
  const Augmentation& aug = options_.augmentation;
  const bool augment = aug.enabled();
  Batch batch;
  batch.indices = indices;
  std::vector<std::int64_t> labels;
  Shape first;
  float* dst = nullptr;
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (stopping_.load(std::memory_order_relaxed)) return std::nullopt;
    const std::int64_t index = indices[k];
    Example ex = dataset_->get(index);
    CK_CHECK(ex.image.defined() && ex.image.dim() == 3, "DataLoader: example ", index,
             " is not an image [C, H, W]");
    Tensor image = pre.apply_geometry(ex.image);
    if (augment) image = aug.apply(image, options_.seed, epoch, index);
    image = pre.apply_values(image);
    if (k == 0) {
      first = image.shape();
      batch.images = Tensor::empty(Shape{static_cast<std::int64_t>(indices.size()), first[0],
                                         first[1], first[2]},
                                   TensorOptions(DType::float32));
      dst = batch.images.data<float>();
    }
    CK_CHECK(image.shape() == first, "DataLoader: example ", index, " is ", image.shape(),
             " after preprocessing but example ", indices[0], " of the same batch is ", first,
             "; give Preprocessing::resize (or ImageFolderOptions height/width) to batch images "
             "of different sizes");
    CK_CHECK(ex.label >= 0 && ex.label < dataset_->num_classes(), "DataLoader: example ", index,
             " has label ", ex.label, " outside [0, ", dataset_->num_classes(), ")");
    std::memcpy(dst + static_cast<std::int64_t>(k) * first.numel(), image.data<float>(),
                static_cast<std::size_t>(first.numel()) * sizeof(float));
    labels.push_back(ex.label);
  }
  batch.labels = from_vector(labels, Shape{static_cast<std::int64_t>(labels.size())},
                             TensorOptions(DType::int64));
  return batch;
}

void DataLoader::worker_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [this] {
      return stop_ || (active_ && next_to_claim_ < num_batches() &&
                       next_to_claim_ < next_to_consume_ + options_.max_queue_size);
    });
    if (stop_) return;
    const std::int64_t b = next_to_claim_++;
    const std::uint64_t generation = generation_, epoch = epoch_;
    Ready ready;
    std::vector<std::int64_t> indices;
    // Everything that may throw is caught: an exception escaping a worker
    // would end the process (std::terminate) instead of reaching the consumer.
    try {
      indices = batch_indices(b);
    } catch (...) {
      ready.error = std::current_exception();
    }
    lock.unlock();
    if (!ready.error) {
      try {
        ready.batch = build_batch(indices, epoch);
      } catch (...) {
        ready.error = std::current_exception();
      }
    }
    lock.lock();
    if (generation == generation_ && (ready.batch || ready.error)) {
      ready_[b] = std::move(ready);
      ready_cv_.notify_all();
    }
  }
}

std::optional<Batch> DataLoader::next() {
  if (!started_) start_epoch(0);
  std::unique_lock lock(mutex_);
  if (!active_) return std::nullopt;
  if (next_to_consume_ >= num_batches()) {
    end_epoch_locked();
    return std::nullopt;
  }
  const std::int64_t b = next_to_consume_;
  Ready ready;
  if (workers_.empty()) {
    const std::vector<std::int64_t> indices = batch_indices(b);
    const std::uint64_t epoch = epoch_;
    lock.unlock();
    try {
      ready.batch = build_batch(indices, epoch);
    } catch (...) {
      ready.error = std::current_exception();
    }
    lock.lock();
  } else {
    ready_cv_.wait(lock, [&] { return stop_ || ready_.count(b) > 0; });
    if (stop_) return std::nullopt;
    ready = std::move(ready_[b]);
    ready_.erase(b);
  }
  ++next_to_consume_;
  if (ready.error) {
    end_epoch_locked();
    lock.unlock();
    work_cv_.notify_all();
    std::rethrow_exception(ready.error);
  }
  lock.unlock();
  work_cv_.notify_all();  // the window moved: one more batch may be claimed
  Batch batch = std::move(*ready.batch);
  batch.padding = padding_in_batch(b);
  if (options_.device != kCPU) {
    batch.images = batch.images.to(options_.device);
    batch.labels = batch.labels.to(options_.device);
  }
  return batch;
}

}  // namespace convkit::data
