#pragma once
// CIFAR-10 binary batches: records of 1 label byte + 3072 pixel bytes
// (1024 red, 1024 green, 1024 blue, each row-major 32x32). Plain or gzipped.
// A file whose size is not a whole number of records, or a label > 9, throws
// convkit::Error naming the file and the byte offset.
#include <cstdint>
#include <string>
#include <vector>

#include "convkit/data/dataset.h"

namespace convkit::data {

class CIFAR10 final : public Dataset {
 public:
  // `root` holds data_batch_1.bin .. data_batch_5.bin and test_batch.bin,
  // directly or in a cifar-10-batches-bin/ subfolder. Class names come from
  // batches.meta.txt when present, else the standard ten.
  CIFAR10(const std::string& root, Split split);
  // Any list of batch files, read in order.
  explicit CIFAR10(const std::vector<std::string>& files);

  static constexpr std::int64_t kRecordBytes = 1 + 3 * 32 * 32;

  std::int64_t size() const override { return static_cast<std::int64_t>(labels_.size()); }
  Example get(std::int64_t index) const override;
  std::int64_t num_classes() const override { return 10; }
  Shape image_shape() const override { return Shape{3, 32, 32}; }
  std::vector<std::string> class_names() const override { return class_names_; }

 private:
  void load(const std::vector<std::string>& files);
  std::vector<std::uint8_t> pixels_;  // [N, 3, 32, 32]
  std::vector<std::uint8_t> labels_;
  std::vector<std::string> class_names_;
};

}  // namespace convkit::data
