#pragma once
// Dataset: an indexable collection of labelled images. Readers (IDX, CIFAR-10,
// image folders) implement it; the DataLoader batches, shuffles and augments it.
//
// Convention: get(i).image is a float32 cpu tensor [C, H, W] holding the raw
// pixel values 0..255, before any preprocessing. Scaling to [0, 1] and
// normalisation belong to a Preprocessing value (convkit/data/preprocessing.h),
// which is stored with the model, so a prediction applies exactly what
// training applied.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "convkit/core/shape.h"
#include "convkit/core/tensor.h"

namespace convkit::data {

struct Example {
  Tensor image;            // float32 [C, H, W], cpu, values 0..255
  std::int64_t label = 0;  // class index in [0, num_classes())
};

enum class Split { train, test };

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  // Must be safe to call from several threads at once: DataLoader workers do.
  // Throws convkit::Error for an index outside [0, size()).
  virtual Example get(std::int64_t index) const = 0;
  virtual std::int64_t num_classes() const = 0;
  // [C, H, W] of every example; H and W are 0 when images differ in size
  // (an image folder read without a resize).
  virtual Shape image_shape() const = 0;
  // One name per class where the format records them, else empty.
  virtual std::vector<std::string> class_names() const { return {}; }
};

// In-memory images [N, C, H, W] (any float dtype, cpu) and int64 labels [N].
class TensorDataset final : public Dataset {
 public:
  TensorDataset(Tensor images, Tensor labels, std::int64_t num_classes,
                std::vector<std::string> class_names = {});
  std::int64_t size() const override { return images_.size(0); }
  Example get(std::int64_t index) const override;
  std::int64_t num_classes() const override { return num_classes_; }
  Shape image_shape() const override;
  std::vector<std::string> class_names() const override { return class_names_; }

 private:
  Tensor images_;  // float32, contiguous
  std::vector<std::int64_t> labels_;
  std::int64_t num_classes_;
  std::vector<std::string> class_names_;
};

// The examples of `base` at `indices`, in that order (e.g. a validation split).
class Subset final : public Dataset {
 public:
  Subset(std::shared_ptr<const Dataset> base, std::vector<std::int64_t> indices);
  std::int64_t size() const override { return static_cast<std::int64_t>(indices_.size()); }
  Example get(std::int64_t index) const override;
  std::int64_t num_classes() const override { return base_->num_classes(); }
  Shape image_shape() const override { return base_->image_shape(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<std::int64_t> indices_;
};

// Throws the standard "index out of range" Error; for Dataset implementations.
void check_index(const char* dataset, std::int64_t index, std::int64_t size);

}  // namespace convkit::data
