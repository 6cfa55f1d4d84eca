#pragma once
// Image folders in the cats-vs-dogs layout: root/<class>/**/<image>. Class
// indices follow the sorted subfolder names (as Keras' flow_from_directory and
// torchvision's ImageFolder do); files ending .png, .jpg or .jpeg (any case)
// are read, others ignored. Images are decoded when get() asks for them, so
// DataLoader workers decode in parallel.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "convkit/data/dataset.h"
#include "convkit/data/transforms.h"

namespace convkit::data {

// Decodes a PNG or JPEG file (recognised by its signature) to float32 RGB
// [3, H, W] with values 0..255: grayscale is repeated, alpha dropped, palettes
// expanded, 16-bit samples reduced to their high byte (as PIL's convert("RGB")).
// A corrupt or truncated file throws Error naming the file and the byte offset
// where decoding failed.
Tensor load_image(const std::string& path);
// Same, from bytes in memory; `name` is used in error messages.
Tensor decode_image(const std::vector<std::uint8_t>& bytes, const std::string& name);

// The size of a PNG or JPEG file, from its header alone: the signature, the
// header chunks and the same size limits as decoding, without the pixels
// (a file whose header is sound may still hold corrupt pixel data).
// Throws Error naming the file and the byte offset, as load_image does.
struct ImageHeader {
  std::uint32_t width = 0, height = 0;
};
ImageHeader probe_image(const std::string& path);

struct ImageFolderOptions {
  // Resize every image to height x width on load (Keras' target_size).
  // Without one, images keep their sizes and batching needs a
  // Preprocessing::resize.
  std::int64_t height = 0, width = 0;
  Interpolation interpolation = Interpolation::bilinear;
  // Probe every file's header when the folder is indexed, so a file that is
  // not an image, or a truncated or oversized one, is an Error before
  // training starts rather than partway through an epoch. It reads the head
  // of each file once; turn it off for a folder already known to be sound.
  bool check_headers = true;
};

class ImageFolder final : public Dataset {
 public:
  explicit ImageFolder(const std::string& root, ImageFolderOptions options = {});

  std::int64_t size() const override { return static_cast<std::int64_t>(files_.size()); }
  Example get(std::int64_t index) const override;
  std::int64_t num_classes() const override {
    return static_cast<std::int64_t>(class_names_.size());
  }
  Shape image_shape() const override { return Shape{3, options_.height, options_.width}; }
  std::vector<std::string> class_names() const override { return class_names_; }
  const std::string& path(std::int64_t index) const;

 private:
  ImageFolderOptions options_;
  std::vector<std::string> class_names_;
  std::vector<std::string> files_;
  std::vector<std::int64_t> labels_;
};

}  // namespace convkit::data
