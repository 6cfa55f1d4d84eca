#pragma once
// IDX files (the MNIST / Fashion-MNIST format), plain or gzipped: a 4-byte
// magic (0, 0, type, rank), rank big-endian uint32 sizes, then the data.
// Only type 0x08 (unsigned byte) is read, the type every MNIST file uses.
// Gzip is recognised by its magic bytes, whatever the file is called.
//
// Every check failure throws convkit::Error naming the file and the byte
// offset (in the decompressed stream for a gzipped file, in the compressed
// file for a gzip error).
#include <cstdint>
#include <string>
#include <vector>

#include "convkit/data/dataset.h"

namespace convkit::data {

struct IdxArray {
  std::vector<std::int64_t> dims;   // e.g. {60000, 28, 28}
  std::vector<std::uint8_t> data;   // row-major, product(dims) bytes
};

IdxArray read_idx(const std::string& path);

// Images from an IDX file of rank 3 [N, H, W] and labels from one of rank 1 [N]:
// examples are float32 [1, H, W] with values 0..255.
class IdxDataset : public Dataset {
 public:
  IdxDataset(const std::string& images_path, const std::string& labels_path,
             std::int64_t num_classes, std::vector<std::string> class_names = {});
  std::int64_t size() const override { return count_; }
  Example get(std::int64_t index) const override;
  std::int64_t num_classes() const override { return num_classes_; }
  Shape image_shape() const override { return Shape{1, height_, width_}; }
  std::vector<std::string> class_names() const override { return class_names_; }
  // The raw label bytes, for statistics without decoding images.
  const std::vector<std::uint8_t>& labels() const { return labels_; }

 private:
  std::int64_t count_ = 0, height_ = 0, width_ = 0, num_classes_ = 0;
  std::vector<std::uint8_t> pixels_;
  std::vector<std::uint8_t> labels_;
  std::vector<std::string> class_names_;
};

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kFashionMNISTDefaultRoot = "/usr/share/datasets/fashion-mnist";

// The four standard files in `root`: {train,t10k}-{images-idx3,labels-idx1}-ubyte,
// each with or without a .gz suffix (the first that exists is read).
class MNIST : public IdxDataset {
 public:
  MNIST(const std::string& root, Split split);
};

class FashionMNIST : public IdxDataset {
 public:
  explicit FashionMNIST(Split split = Split::train);  // kFashionMNISTDefaultRoot
  FashionMNIST(const std::string& root, Split split);
  static std::vector<std::string> names();  // "T-shirt/top", "Trouser", ...
};

}  // namespace convkit::data
