#include <convkit/data/data_loader.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

#include "data_files.h"

namespace convkit::testing {
namespace {

using data::Batch;
using data::DataLoader;
using data::DataLoaderOptions;

// Example i: a [2, 5, 6] image of values 1000 i + k, label i % 3. Counts its
// get() calls, can sleep in each, and throws at `throw_at`.
class SyntheticDataset final : public data::Dataset {
 public:
  explicit SyntheticDataset(std::int64_t n, std::int64_t throw_at = -1, int sleep_ms = 0,
                            bool runtime_error = false)
      : n_(n), throw_at_(throw_at), sleep_ms_(sleep_ms), runtime_error_(runtime_error) {}
  std::int64_t size() const override { return n_; }
  std::int64_t num_classes() const override { return 3; }
  Shape image_shape() const override { return Shape{2, 5, 6}; }
  data::Example get(std::int64_t i) const override {
    calls_.fetch_add(1);
    if (sleep_ms_) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    if (i == throw_at_) {
      if (runtime_error_) throw std::runtime_error("custom failure at " + std::to_string(i));
      CK_FAIL("synthetic decode failure at example ", i);
    }
    Tensor image = Tensor::empty(Shape{2, 5, 6});
    float* p = image.data<float>();
    for (int k = 0; k < 60; ++k) p[k] = static_cast<float>(1000 * i + k);
    return {image, i % 3};
  }
  std::int64_t calls() const { return calls_.load(); }

 private:
  std::int64_t n_, throw_at_;
  int sleep_ms_;
  bool runtime_error_;
  mutable std::atomic<std::int64_t> calls_{0};
};

struct Collected {
  std::vector<std::vector<float>> images;
  std::vector<std::vector<std::int64_t>> labels, indices;
};

Collected collect(DataLoader& loader, std::uint64_t epoch) {
  Collected c;
  for (Batch& b : loader.epoch_range(epoch)) {
    c.images.push_back(b.images.to_vector<float>());
    c.labels.push_back(b.labels.to_vector<std::int64_t>());
    c.indices.push_back(b.indices);
  }
  return c;
}

data::Augmentation strong_augmentation() {
  data::Augmentation a;
  a.rotation_range = 25;
  a.width_shift_range = 0.2;
  a.height_shift_range = 0.2;
  a.zoom_range = data::Augmentation::zoom(0.3);
  a.horizontal_flip = true;
  a.crop.padding = 1;
  return a;
}

TEST(DataLoader, BatchesHaveTheDocumentedShapesAndContents) {
  auto ds = std::make_shared<SyntheticDataset>(7);
  DataLoaderOptions o;
  o.batch_size = 3;
  o.shuffle = false;
  DataLoader loader(ds, o);
  EXPECT_EQ(loader.num_batches(), 3);
  EXPECT_EQ(loader.image_shape(), (Shape{2, 5, 6}));
  const Collected c = collect(loader, 0);
  ASSERT_EQ(c.images.size(), 3u);
  EXPECT_EQ(c.indices[2], (std::vector<std::int64_t>{6}));
  EXPECT_EQ(c.labels[0], (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(c.images[1][60 + 7], 4007.0f);  // second sample (index 4) of batch 1
  auto first = loader.epoch_range(0).begin();
  EXPECT_EQ((*first).images.shape(), (Shape{3, 2, 5, 6}));
  EXPECT_EQ((*first).images.dtype(), DType::float32);
  EXPECT_EQ((*first).labels.shape(), (Shape{3}));
  EXPECT_EQ((*first).labels.dtype(), DType::int64);
}

TEST(DataLoader, ShuffleVisitsEveryIndexOncePerEpochAndReshuffles) {
  auto ds = std::make_shared<SyntheticDataset>(50);
  DataLoaderOptions o;
  o.batch_size = 8;
  o.seed = 3;
  o.workers = 2;
  DataLoader loader(ds, o);
  std::vector<std::vector<std::int64_t>> orders;
  for (std::uint64_t e = 0; e < 3; ++e) {
    std::vector<std::int64_t> order;
    for (const auto& idx : collect(loader, e).indices) order.insert(order.end(), idx.begin(), idx.end());
    std::vector<std::int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (std::int64_t i = 0; i < 50; ++i) ASSERT_EQ(sorted[static_cast<std::size_t>(i)], i) << "epoch " << e;
    EXPECT_EQ(order, data::epoch_order(50, true, 3, e));
    orders.push_back(order);
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
  EXPECT_EQ(data::epoch_order(50, true, 3, 1), orders[1]);
  EXPECT_NE(data::epoch_order(50, true, 4, 1), orders[1]);
  std::vector<std::int64_t> identity(50);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(data::epoch_order(50, false, 3, 1), identity);
  EXPECT_NE(orders[0], identity);
}

TEST(DataLoader, SameBatchesWhateverTheWorkerCount) {
  auto ds = std::make_shared<SyntheticDataset>(23);
  Collected reference[2];
  for (int workers : {0, 1, 3}) {
    DataLoaderOptions o;
    o.batch_size = 4;
    o.seed = 11;
    o.workers = workers;
    o.max_queue_size = 3;
    o.augmentation = strong_augmentation();
    o.preprocessing = data::Preprocessing::identity().rescale(1.0 / 255);
    DataLoader loader(ds, o);
    for (std::uint64_t e = 0; e < 2; ++e) {
      const Collected c = collect(loader, e);
      ASSERT_EQ(c.images.size(), 6u);
      if (workers == 0) {
        reference[e] = c;
        continue;
      }
      EXPECT_EQ(c.indices, reference[e].indices) << workers << " workers, epoch " << e;
      EXPECT_EQ(c.labels, reference[e].labels) << workers << " workers, epoch " << e;
      EXPECT_EQ(c.images, reference[e].images) << workers << " workers, epoch " << e;
    }
  }
  // Augmentation is really on: the same example differs between epochs.
  EXPECT_NE(reference[0].images, reference[1].images);
}

TEST(DataLoader, DropLast) {
  auto ds = std::make_shared<SyntheticDataset>(10);
  DataLoaderOptions o;
  o.batch_size = 4;
  o.drop_last = true;
  DataLoader dropping(ds, o);
  EXPECT_EQ(dropping.num_batches(), 2);
  const Collected c = collect(dropping, 0);
  ASSERT_EQ(c.indices.size(), 2u);
  for (const auto& idx : c.indices) EXPECT_EQ(idx.size(), 4u);
  o.drop_last = false;
  DataLoader keeping(ds, o);
  const Collected k = collect(keeping, 0);
  ASSERT_EQ(k.indices.size(), 3u);
  EXPECT_EQ(k.indices[2].size(), 2u);
}

TEST(DataLoader, PrefetchStaysWithinTheQueueBound) {
  auto ds = std::make_shared<SyntheticDataset>(60);
  DataLoaderOptions o;
  o.batch_size = 2;
  o.workers = 3;
  o.max_queue_size = 2;
  DataLoader loader(ds, o);
  loader.start_epoch(0);
  for (std::int64_t consumed = 1; consumed <= 4; ++consumed) {
    ASSERT_TRUE(loader.next().has_value());
    // Let the workers run as far ahead as they are allowed to.
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    EXPECT_LE(ds->calls(), (consumed + o.max_queue_size) * o.batch_size) << consumed;
  }
  EXPECT_GE(ds->calls(), 4 * o.batch_size);
}

TEST(DataLoader, WorkerExceptionsReachTheConsumerUnchanged) {
  for (int workers : {0, 3}) {
    auto ds = std::make_shared<SyntheticDataset>(20, 13);
    DataLoaderOptions o;
    o.batch_size = 4;
    o.shuffle = false;
    o.workers = workers;
    DataLoader loader(ds, o);
    loader.start_epoch(0);
    for (int b = 0; b < 3; ++b) ASSERT_TRUE(loader.next().has_value()) << b;
    EXPECT_ERROR_MENTIONS(loader.next(), "synthetic decode failure at example 13");
    EXPECT_FALSE(loader.next().has_value());  // the epoch ended
    loader.start_epoch(1);                    // and a new one starts cleanly
    EXPECT_TRUE(loader.next().has_value());
  }
  auto ds = std::make_shared<SyntheticDataset>(8, 2, 0, true);
  DataLoaderOptions o;
  o.workers = 2;
  DataLoader loader(ds, o);
  EXPECT_THROW(
      {
        try {
          loader.next();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "custom failure at 2");
          throw;
        }
      },
      std::runtime_error);
}

TEST(DataLoader, DestroyedMidEpochStopsPromptly) {
  auto ds = std::make_shared<SyntheticDataset>(400, -1, 5);
  DataLoaderOptions o;
  o.batch_size = 16;
  o.workers = 3;
  o.max_queue_size = 8;
  const auto start = std::chrono::steady_clock::now();
  {
    DataLoader loader(ds, o);
    ASSERT_TRUE(loader.next().has_value());
  }
  {
    DataLoader never_consumed(ds, o);
    never_consumed.start_epoch(4);
  }
  {
    DataLoader never_started(ds, o);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // One batch is 80 ms of sleeping; finishing the epoch would be 2 s.
  EXPECT_LT(seconds, 1.0);
  EXPECT_LT(ds->calls(), 200);
}

TEST(DataLoader, ArgumentsAndMixedSizesAreChecked) {
  auto ds = std::make_shared<SyntheticDataset>(4);
  DataLoaderOptions o;
  o.batch_size = 0;
  EXPECT_ERROR_MENTIONS(DataLoader(ds, o), "batch_size", "0");
  o = DataLoaderOptions{};
  o.max_queue_size = 0;
  EXPECT_ERROR_MENTIONS(DataLoader(ds, o), "max_queue_size");
  o = DataLoaderOptions{};
  o.augmentation.shear_range = -3;
  EXPECT_ERROR_MENTIONS(DataLoader(ds, o), "shear_range");
  EXPECT_ERROR_MENTIONS(DataLoader(nullptr, DataLoaderOptions{}), "null");

  // Two sizes in one batch, without a resize to reconcile them.
  class TwoSizes final : public data::Dataset {
   public:
    std::int64_t size() const override { return 2; }
    std::int64_t num_classes() const override { return 1; }
    Shape image_shape() const override { return Shape{1, 0, 0}; }
    data::Example get(std::int64_t i) const override { return {zeros({1, 2 + i, 2}), 0}; }
  };
  DataLoader mixed(std::make_shared<TwoSizes>(), DataLoaderOptions{});
  EXPECT_ERROR_MENTIONS(mixed.next(), "example 1 is [1, 3, 2]", "Preprocessing::resize");
  o = DataLoaderOptions{};
  o.preprocessing = data::Preprocessing::identity().resize(4, 4);
  DataLoader resized(std::make_shared<TwoSizes>(), o);
  EXPECT_EQ(resized.next()->images.shape(), (Shape{2, 1, 4, 4}));
  EXPECT_EQ(resized.image_shape(), (Shape{1, 4, 4}));
}

class DataLoaderDevice : public ::testing::TestWithParam<Device> {};

TEST_P(DataLoaderDevice, BatchesAreMovedToTheDevice) {
  auto ds = std::make_shared<SyntheticDataset>(5);
  DataLoaderOptions o;
  o.batch_size = 5;
  o.shuffle = false;
  o.workers = 1;
  o.device = GetParam();
  DataLoader loader(ds, o);
  const Batch b = *loader.next();
  EXPECT_EQ(b.images.device(), GetParam());
  EXPECT_EQ(b.labels.device(), GetParam());
  EXPECT_EQ(b.labels.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(b.images.to_vector<float>()[60 * 4 + 59], 4059.0f);
}

INSTANTIATE_TEST_SUITE_P(Devices, DataLoaderDevice, ::testing::ValuesIn(test_devices()), device_name);

}  // namespace
}  // namespace convkit::testing
