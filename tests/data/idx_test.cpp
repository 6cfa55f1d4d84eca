#include <convkit/data/idx.h>

#include <filesystem>
#include <numeric>

#include "data_files.h"
#include "memory_limit.h"

namespace convkit::testing {
namespace {

using data::IdxDataset;
using data::read_idx;

// n images of h x w with pixel (i, y, x) = (7 i + 3 y + x) % 256, labels i % 10.
struct Generated {
  Bytes images, labels;
};
Generated generate(std::uint32_t n, std::uint32_t h, std::uint32_t w) {
  Bytes pixels, labels;
  for (std::uint32_t i = 0; i < n; ++i) {
    labels.push_back(static_cast<std::uint8_t>(i % 10));
    for (std::uint32_t y = 0; y < h; ++y) {
      for (std::uint32_t x = 0; x < w; ++x) pixels.push_back(static_cast<std::uint8_t>((7 * i + 3 * y + x) % 256));
    }
  }
  return {idx_bytes({n, h, w}, pixels), idx_bytes({n}, labels)};
}

void expect_dataset_matches(const IdxDataset& ds, std::uint32_t n, std::uint32_t h, std::uint32_t w) {
  ASSERT_EQ(ds.size(), n);
  EXPECT_EQ(ds.image_shape(), (Shape{1, h, w}));
  EXPECT_EQ(ds.num_classes(), 10);
  for (std::uint32_t i = 0; i < n; ++i) {
    const data::Example ex = ds.get(i);
    EXPECT_EQ(ex.label, i % 10);
    ASSERT_EQ(ex.image.shape(), (Shape{1, h, w}));
    EXPECT_EQ(ex.image.dtype(), DType::float32);
    const auto v = ex.image.to_vector<float>();
    for (std::uint32_t y = 0; y < h; ++y) {
      for (std::uint32_t x = 0; x < w; ++x) {
        ASSERT_EQ(v[y * w + x], static_cast<float>((7 * i + 3 * y + x) % 256)) << i << " " << y << " " << x;
      }
    }
  }
}

TEST(Idx, ReadsPlainAndGzippedFilesAlike) {
  TempDir dir;
  const Generated g = generate(5, 3, 4);
  write_bytes(dir.file("images"), g.images);
  write_bytes(dir.file("labels"), g.labels);
  // gzip is recognised by content, whatever the name says.
  write_bytes(dir.file("images.gz"), gzip(g.images));
  write_bytes(dir.file("labels-no-suffix"), gzip(g.labels));

  const data::IdxArray plain = read_idx(dir.file("images"));
  const data::IdxArray zipped = read_idx(dir.file("images.gz"));
  EXPECT_EQ(plain.dims, (std::vector<std::int64_t>{5, 3, 4}));
  EXPECT_EQ(zipped.dims, plain.dims);
  EXPECT_EQ(zipped.data, plain.data);
  EXPECT_EQ(plain.data.size(), 60u);

  expect_dataset_matches(IdxDataset(dir.file("images"), dir.file("labels"), 10), 5, 3, 4);
  expect_dataset_matches(IdxDataset(dir.file("images.gz"), dir.file("labels-no-suffix"), 10), 5, 3, 4);
}

TEST(Idx, ConcatenatedGzipMembersAreOneStream) {
  TempDir dir;
  const Generated g = generate(4, 2, 2);
  Bytes first(g.images.begin(), g.images.begin() + 10), rest(g.images.begin() + 10, g.images.end());
  Bytes joined = gzip(first);
  const Bytes second = gzip(rest);
  joined.insert(joined.end(), second.begin(), second.end());
  write_bytes(dir.file("joined.gz"), joined);
  write_bytes(dir.file("plain"), g.images);
  EXPECT_EQ(read_idx(dir.file("joined.gz")).data, read_idx(dir.file("plain")).data);
}

TEST(Idx, MnistLayoutFindsFilesWithOrWithoutGz) {
  TempDir dir;
  const Generated train = generate(6, 2, 3), test = generate(3, 2, 3);
  write_bytes(dir.file("train-images-idx3-ubyte.gz"), gzip(train.images));
  write_bytes(dir.file("train-labels-idx1-ubyte"), train.labels);
  write_bytes(dir.file("t10k-images-idx3-ubyte"), test.images);
  write_bytes(dir.file("t10k-labels-idx1-ubyte.gz"), gzip(test.labels));
  const data::FashionMNIST fashion(dir.path(), data::Split::train);
  expect_dataset_matches(fashion, 6, 2, 3);
  EXPECT_EQ(fashion.class_names().at(9), "Ankle boot");
  expect_dataset_matches(data::MNIST(dir.path(), data::Split::test), 3, 2, 3);
  EXPECT_EQ(data::MNIST(dir.path(), data::Split::test).class_names().at(3), "3");
  EXPECT_ERROR_MENTIONS(data::MNIST(dir.path() + "/nowhere", data::Split::train),
                        "nowhere", "-idx1-ubyte", "-idx3-ubyte");
}

TEST(Idx, RealFashionMnistWhenInstalled) {
  const std::string root = data::kFashionMNISTDefaultRoot;
  if (!std::filesystem::exists(root + "/train-images-idx3-ubyte.gz") &&
      !std::filesystem::exists(root + "/train-images-idx3-ubyte")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed in " << root
                 << " (Debian package dataset-fashion-mnist)";
  }
  const data::FashionMNIST train(data::Split::train), test(root, data::Split::test);
  ASSERT_EQ(train.size(), 60000);
  ASSERT_EQ(test.size(), 10000);
  EXPECT_EQ(train.image_shape(), (Shape{1, 28, 28}));
  // The published files start with an ankle boot in both splits, and every
  // class has exactly 6000 / 1000 examples.
  EXPECT_EQ(train.get(0).label, 9);
  EXPECT_EQ(test.get(0).label, 9);
  EXPECT_EQ(train.get(3).label, 3);
  for (const auto* ds : {&train, &test}) {
    std::vector<int> counts(10, 0);
    for (std::uint8_t l : ds->labels()) {
      ASSERT_LT(l, 10);
      ++counts[l];
    }
    for (int c : counts) EXPECT_EQ(c, ds->size() / 10);
  }
  // The first training image's pixel sum, from the file read independently.
  const auto first = train.get(0).image.to_vector<double>();
  EXPECT_EQ(std::accumulate(first.begin(), first.end(), 0.0), 76247.0);
  EXPECT_EQ(*std::max_element(first.begin(), first.end()), 255.0);
}

// ---------------------------------------------------------------- errors

TEST(IdxErrors, BadMagicNamesFileAndOffsetZero) {
  TempDir dir;
  Bytes b = generate(2, 2, 2).images;
  b[0] = 0x1f;  // not gzip either: 1f 00
  write_bytes(dir.file("bad-magic"), b);
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("bad-magic")), dir.file("bad-magic"), "bad magic",
                        "byte offset 0");
  b = generate(2, 2, 2).images;
  b[2] = 0x0D;  // float: a valid IDX type this reader does not read
  write_bytes(dir.file("float"), b);
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("float")), dir.file("float"), "0d", "byte offset 2");
}

TEST(IdxErrors, WrongRankForImagesOrLabels) {
  TempDir dir;
  const Generated g = generate(2, 2, 2);
  write_bytes(dir.file("images"), g.images);
  write_bytes(dir.file("labels"), g.labels);
  // Swapped: labels where images belong and vice versa.
  EXPECT_ERROR_MENTIONS(IdxDataset(dir.file("labels"), dir.file("images"), 10), dir.file("labels"),
                        "rank 3", "byte offset 3");
  EXPECT_ERROR_MENTIONS(IdxDataset(dir.file("images"), dir.file("images"), 10), "rank 1",
                        "byte offset 3");
}

TEST(IdxErrors, TruncatedHeaderAndDataNameTheOffset) {
  TempDir dir;
  const Bytes full = generate(3, 4, 4).images;  // 16 header + 48 data bytes
  write_bytes(dir.file("short-header"), Bytes(full.begin(), full.begin() + 10));
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("short-header")), dir.file("short-header"), "truncated",
                        "byte offset 8");
  write_bytes(dir.file("short-data"), Bytes(full.begin(), full.end() - 5));
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("short-data")), dir.file("short-data"), "truncated",
                        "byte offset 59");
  Bytes longer = full;
  longer.push_back(0);
  write_bytes(dir.file("long"), longer);
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("long")), "1 unexpected bytes", "byte offset 64");
  // Truncated inside a gzip file: the offset is in the decompressed data.
  write_bytes(dir.file("short.gz"), gzip(Bytes(full.begin(), full.end() - 5)));
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("short.gz")), dir.file("short.gz"),
                        "byte offset 59 of the decompressed data");
  write_bytes(dir.file("empty"), Bytes{});
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("empty")), "truncated", "byte offset 0");
}

TEST(IdxErrors, ZeroDimensionAndHugeHeader) {
  TempDir dir;
  write_bytes(dir.file("zero"), idx_bytes({2, 0, 3}, {}));
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("zero")), "dimension 1 has size 0", "byte offset 8");
  // A header claiming 2^32-1 squared bytes must not allocate them.
  write_bytes(dir.file("huge"), idx_bytes({0xffffffffu, 0xffffffffu}, Bytes(8, 0)));
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("huge")), "truncated", dir.file("huge"));
}

// Issue 22: gunzip had no cap; 1 MB of gzip holds a gigabyte. A gzipped
// IDX file stops decompressing past what its header declares.
TEST(IdxErrors, GzipDecompressingPastTheHeaderSizeStopsThere) {
  TempDir dir;
  write_bytes(dir.file("bomb.gz"), gzip(idx_bytes({2}, Bytes(std::size_t{8} << 20, 0))));
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("bomb.gz")), dir.file("bomb.gz"),
                        "decompresses to more than 10 bytes, the most this IDX file can hold",
                        "of the gzip-compressed file");
  // Exactly the declared size reads.
  write_bytes(dir.file("ok.gz"), gzip(idx_bytes({3, 2}, Bytes{1, 2, 3, 4, 5, 6})));
  EXPECT_EQ(read_idx(dir.file("ok.gz")).data, (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6}));
}

// Running out of memory while decompressing is an Error naming the file,
// not std::bad_alloc: a header declaring 48 MiB within the limits, read
// with 32 MiB of address space to spare.
TEST(IdxErrorsDeathTest, OutOfMemoryWhileDecompressingIsAnError) {
  if (!kAddressSpaceLimitWorks) GTEST_SKIP() << "sanitizers need more address space than the limit leaves";
  TempDir dir;
  const std::string path = dir.file("large.gz");
  write_bytes(path, gzip(idx_bytes({3u << 10, 4u << 10, 4u << 10}, Bytes(std::size_t{48} << 20, 0))));
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_after_body_under_memory_limit(
                  std::uint64_t{32} << 20, [&] { read_idx(path); },
                  "IDX file '" + path + "': out of memory while decompressing it"),
              ::testing::ExitedWithCode(0), "");
}

TEST(IdxErrors, CorruptAndTruncatedGzip) {
  TempDir dir;
  const Bytes zipped = gzip(generate(50, 8, 8).images);
  Bytes corrupt = zipped;
  for (std::size_t i = 20; i < 40; ++i) corrupt[i] ^= 0x5a;
  write_bytes(dir.file("corrupt.gz"), corrupt);
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("corrupt.gz")), dir.file("corrupt.gz"), "gzip",
                        "byte offset");
  write_bytes(dir.file("cut.gz"), Bytes(zipped.begin(), zipped.begin() + zipped.size() / 2));
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("cut.gz")), dir.file("cut.gz"), "truncated gzip",
                        "byte offset " + std::to_string(zipped.size() / 2));
  Bytes trailing = zipped;
  trailing.push_back('x');
  write_bytes(dir.file("trailing.gz"), trailing);
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("trailing.gz")), "after the end of the gzip stream",
                        "byte offset " + std::to_string(zipped.size()));
  // A corrupted CRC: the data inflates but does not check.
  Bytes bad_crc = zipped;
  bad_crc[bad_crc.size() - 6] ^= 0xff;
  write_bytes(dir.file("crc.gz"), bad_crc);
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("crc.gz")), "corrupt gzip", "byte offset");
}

TEST(IdxErrors, CountMismatchAndLabelRange) {
  TempDir dir;
  const Generated g = generate(4, 2, 2);
  write_bytes(dir.file("images"), g.images);
  write_bytes(dir.file("three-labels"), idx_bytes({3}, {0, 1, 2}));
  EXPECT_ERROR_MENTIONS(IdxDataset(dir.file("images"), dir.file("three-labels"), 10), "4 images",
                        "3 labels", dir.file("three-labels"));
  write_bytes(dir.file("bad-label"), idx_bytes({4}, {0, 1, 12, 2}));
  EXPECT_ERROR_MENTIONS(IdxDataset(dir.file("images"), dir.file("bad-label"), 10),
                        dir.file("bad-label"), "label 12", "byte offset 10");
  EXPECT_ERROR_MENTIONS(read_idx(dir.file("missing")), dir.file("missing"), "cannot open");
  write_bytes(dir.file("labels"), g.labels);
  const IdxDataset ok(dir.file("images"), dir.file("labels"), 10);
  EXPECT_ERROR_MENTIONS(ok.get(4), "index 4", "4 examples");
}

}  // namespace
}  // namespace convkit::testing
