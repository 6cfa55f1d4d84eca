#include <convkit/data/cifar.h>

#include "data_files.h"

namespace convkit::testing {
namespace {

// One record: label, then 1024 R, 1024 G, 1024 B bytes; pixel value
// (channel * 50 + y + x + label) % 256.
Bytes record(std::uint8_t label) {
  Bytes r = {label};
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) r.push_back(static_cast<std::uint8_t>((c * 50 + y + x + label) % 256));
    }
  }
  return r;
}

Bytes records(const std::vector<std::uint8_t>& labels) {
  Bytes out;
  for (std::uint8_t l : labels) {
    const Bytes r = record(l);
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

TEST(Cifar10, ReadsGeneratedRecordsPlanarRGB) {
  TempDir dir;
  write_bytes(dir.file("two.bin"), records({3, 7}));
  const data::CIFAR10 ds({dir.file("two.bin")});
  ASSERT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.image_shape(), (Shape{3, 32, 32}));
  EXPECT_EQ(ds.num_classes(), 10);
  EXPECT_EQ(ds.class_names().at(3), "cat");
  for (std::int64_t i = 0; i < 2; ++i) {
    const data::Example ex = ds.get(i);
    const int label = i == 0 ? 3 : 7;
    EXPECT_EQ(ex.label, label);
    const auto v = ex.image.to_vector<float>();
    ASSERT_EQ(v.size(), 3072u);
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; y += 5) {
        for (int x = 0; x < 32; x += 3) {
          ASSERT_EQ(v[static_cast<std::size_t>((c * 32 + y) * 32 + x)],
                    static_cast<float>((c * 50 + y + x + label) % 256));
        }
      }
    }
  }
}

TEST(Cifar10, SplitLayoutAndMetaNames) {
  TempDir dir;
  const std::string batches = dir.path() + "/cifar-10-batches-bin";
  for (int i = 1; i <= 5; ++i) {
    write_bytes(batches + "/data_batch_" + std::to_string(i) + ".bin",
                records({static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(i + 4)}));
  }
  write_bytes(batches + "/test_batch.bin", gzip(records({0})));
  std::string meta;
  for (int c = 0; c < 10; ++c) meta += "class" + std::to_string(c) + "\n";
  write_bytes(batches + "/batches.meta.txt", Bytes(meta.begin(), meta.end()));

  const data::CIFAR10 train(dir.path(), data::Split::train);
  ASSERT_EQ(train.size(), 10);
  EXPECT_EQ(train.get(0).label, 1);
  EXPECT_EQ(train.get(9).label, 9);
  EXPECT_EQ(train.class_names().at(4), "class4");
  const data::CIFAR10 test(batches, data::Split::test);
  ASSERT_EQ(test.size(), 1);
  EXPECT_EQ(test.get(0).image.to_vector<float>()[1024], 50.0f);
}

TEST(Cifar10Errors, TruncatedRecordBadLabelMissingFile) {
  TempDir dir;
  Bytes b = records({1, 2});
  b.resize(b.size() - 100);
  write_bytes(dir.file("short.bin"), b);
  EXPECT_ERROR_MENTIONS(data::CIFAR10({dir.file("short.bin")}), dir.file("short.bin"), "truncated",
                        "byte offset 3073");
  b = records({1, 2, 3});
  b[2 * 3073] = 10;
  write_bytes(dir.file("label.bin"), b);
  EXPECT_ERROR_MENTIONS(data::CIFAR10({dir.file("label.bin")}), dir.file("label.bin"), "label 10",
                        "byte offset 6146");
  write_bytes(dir.file("empty.bin"), {});
  EXPECT_ERROR_MENTIONS(data::CIFAR10({dir.file("empty.bin")}), "empty", "byte offset 0");
  EXPECT_ERROR_MENTIONS(data::CIFAR10(dir.path(), data::Split::test), "test_batch.bin",
                        "does not exist");
}

}  // namespace
}  // namespace convkit::testing
