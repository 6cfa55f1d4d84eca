#include "convkit/data/dataset.h"

#include "convkit/core/error.h"

namespace convkit::data {

void check_index(const char* dataset, std::int64_t index, std::int64_t size) {
  CK_CHECK(index >= 0 && index < size, dataset, ": index ", index, " is out of range for ",
           size, " examples");
}

TensorDataset::TensorDataset(Tensor images, Tensor labels, std::int64_t num_classes,
                             std::vector<std::string> class_names)
    : num_classes_(num_classes), class_names_(std::move(class_names)) {
  CK_CHECK(images.defined() && labels.defined(), "TensorDataset: undefined images or labels");
  CK_CHECK(images.dim() == 4, "TensorDataset: expected images [N, C, H, W], got shape ",
           images.shape());
  CK_CHECK(is_floating(images.dtype()), "TensorDataset: expected float images, got ",
           images.dtype());
  CK_CHECK(labels.dim() == 1 && labels.size(0) == images.size(0),
           "TensorDataset: expected labels [", images.size(0), "] for images ", images.shape(),
           ", got shape ", labels.shape());
  CK_CHECK(labels.dtype() == DType::int64, "TensorDataset: labels must be int64, got ",
           labels.dtype());
  CK_CHECK(num_classes > 0, "TensorDataset: num_classes must be positive, got ", num_classes);
  CK_CHECK(class_names_.empty() || static_cast<std::int64_t>(class_names_.size()) == num_classes,
           "TensorDataset: ", class_names_.size(), " class names for ", num_classes, " classes");
  images_ = images.to(kCPU).to(DType::float32).contiguous();
  labels_ = labels.to_vector<std::int64_t>();
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    CK_CHECK(labels_[i] >= 0 && labels_[i] < num_classes, "TensorDataset: label ", labels_[i],
             " of example ", i, " is outside [0, ", num_classes, ")");
  }
}

Example TensorDataset::get(std::int64_t index) const {
  check_index("TensorDataset", index, size());
  // clone: the caller may write into its image without touching the dataset.
  return Example{images_.select(0, index).clone(), labels_[static_cast<std::size_t>(index)]};
}

Shape TensorDataset::image_shape() const {
  return Shape{images_.size(1), images_.size(2), images_.size(3)};
}

Subset::Subset(std::shared_ptr<const Dataset> base, std::vector<std::int64_t> indices)
    : base_(std::move(base)), indices_(std::move(indices)) {
  CK_CHECK(base_ != nullptr, "Subset: the base dataset is null");
  const std::int64_t n = base_->size();
  for (std::size_t i = 0; i < indices_.size(); ++i) {
    CK_CHECK(indices_[i] >= 0 && indices_[i] < n, "Subset: index ", indices_[i], " (position ", i,
             ") is out of range for a dataset of ", n, " examples");
  }
}

Example Subset::get(std::int64_t index) const {
  check_index("Subset", index, size());
  return base_->get(indices_[static_cast<std::size_t>(index)]);
}

}  // namespace convkit::data
