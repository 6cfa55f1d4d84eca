#include "generated_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include "data/data_files.h"

namespace convkit::testing {

namespace fs = std::filesystem;

std::vector<std::uint8_t> class_image(std::int64_t label, std::int64_t classes, int height,
                                      int width, int channels, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(height * width * channels));
  for (auto& v : px) v = static_cast<std::uint8_t>(rng() % 48);
  // Square centres on a ring around the image centre, one per class.
  const int side = std::max(3, std::min(height, width) / 4);
  const double angle = 6.283185307179586 * static_cast<double>(label) / static_cast<double>(classes);
  const int cy = static_cast<int>((height - side) / 2.0 * (1 + 0.7 * std::sin(angle)));
  const int cx = static_cast<int>((width - side) / 2.0 * (1 + 0.7 * std::cos(angle)));
  for (int y = cy; y < cy + side; ++y)
    for (int x = cx; x < cx + side; ++x)
      for (int c = 0; c < channels; ++c)
        px[static_cast<std::size_t>((y * width + x) * channels + c)] =
            static_cast<std::uint8_t>(200 + rng() % 56);
  return px;
}

void write_fashion_mnist_like(const std::string& dir, int train_count, int test_count,
                              std::uint64_t seed) {
  fs::create_directories(dir);
  auto write_split = [&](const std::string& prefix, int count, std::uint64_t split_seed) {
    Bytes images, labels;
    for (int i = 0; i < count; ++i) {
      const int label = i % 10;
      const auto px = class_image(label, 10, 28, 28, 1, split_seed * 100003 + static_cast<std::uint64_t>(i));
      images.insert(images.end(), px.begin(), px.end());
      labels.push_back(static_cast<std::uint8_t>(label));
    }
    const auto n = static_cast<std::uint32_t>(count);
    write_bytes(dir + "/" + prefix + "-images-idx3-ubyte", idx_bytes({n, 28, 28}, images));
    write_bytes(dir + "/" + prefix + "-labels-idx1-ubyte", idx_bytes({n}, labels));
  };
  write_split("train", train_count, seed);
  write_split("t10k", test_count, seed + 1);
}

void write_cifar10_like(const std::string& dir, int per_batch, int test_count, std::uint64_t seed) {
  fs::create_directories(dir);
  auto write_batch = [&](const std::string& name, int count, std::uint64_t batch_seed) {
    Bytes bytes;
    for (int i = 0; i < count; ++i) {
      const int label = (i * 7 + static_cast<int>(batch_seed)) % 10;
      const auto px = class_image(label, 10, 32, 32, 3, batch_seed * 100003 + static_cast<std::uint64_t>(i));
      bytes.push_back(static_cast<std::uint8_t>(label));
      // Records are planar: all red, then green, then blue.
      for (int c = 0; c < 3; ++c)
        for (int p = 0; p < 32 * 32; ++p) bytes.push_back(px[static_cast<std::size_t>(p * 3 + c)]);
    }
    write_bytes(dir + "/" + name, bytes);
  };
  for (int b = 1; b <= 5; ++b)
    write_batch("data_batch_" + std::to_string(b) + ".bin", per_batch, seed * 10 + static_cast<std::uint64_t>(b));
  write_batch("test_batch.bin", test_count, seed * 10 + 9);
}

void write_image_folder(const std::string& root, const std::vector<std::string>& classes,
                        int per_class, int height, int width, std::uint64_t seed) {
  for (std::size_t k = 0; k < classes.size(); ++k) {
    const std::string dir = root + "/" + classes[k];
    fs::create_directories(dir);
    for (int i = 0; i < per_class; ++i) {
      const auto px = class_image(static_cast<std::int64_t>(k), static_cast<std::int64_t>(classes.size()),
                                  height, width, 3, seed * 1000003 + k * 1009 + static_cast<std::uint64_t>(i));
      const auto w = static_cast<std::uint32_t>(width), h = static_cast<std::uint32_t>(height);
      if (i % 2 == 0)
        write_bytes(dir + "/img" + std::to_string(i) + ".png", png_bytes(w, h, 3, px));
      else
        write_bytes(dir + "/img" + std::to_string(i) + ".jpg", jpeg_bytes(w, h, 3, px));
    }
  }
}

}  // namespace convkit::testing
