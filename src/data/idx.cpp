// IDX reader and the MNIST-layout datasets built on it.
#include "convkit/data/idx.h"

#include <algorithm>
#include <filesystem>

#include "data/file_bytes.h"
#include "data/pixels.h"

namespace convkit::data {

namespace {

constexpr std::uint8_t kUnsignedByte = 0x08;
// The largest gzipped IDX file read (4 GiB; EMNIST's largest is 547 MB).
constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{1} << 32;

bool is_idx_type(std::uint8_t t) {
  return t == 0x08 || t == 0x09 || t == 0x0B || t == 0x0C || t == 0x0D || t == 0x0E;
}

IdxArray parse_idx(const detail::FileBytes& file) {
  detail::ByteReader r(file);
  const std::uint8_t* magic = r.take(4, "the 4-byte magic number");
  if (magic[0] != 0 || magic[1] != 0 || !is_idx_type(magic[2])) {
    file.fail(0, "bad magic number ", detail::hex_bytes(magic, 4),
              " (an IDX file starts 00 00 <type> <rank>)");
  }
  if (magic[2] != kUnsignedByte) {
    file.fail(2, "IDX element type ", detail::hex_bytes(magic + 2, 1),
              " is not supported (only 08, unsigned byte)");
  }
  const int rank = magic[3];
  if (rank == 0) file.fail(3, "rank 0 (an IDX file has at least one dimension)");

  IdxArray array;
  std::uint64_t total = 1;
  for (int d = 0; d < rank; ++d) {
    const std::uint64_t at = r.offset();
    const std::uint32_t size = r.u32be("a dimension size");
    if (size == 0) file.fail(at, "dimension ", d, " has size 0");
    total *= size;
    // More elements than bytes left is certainly truncated; also stops overflow.
    if (total > file.bytes.size()) {
      file.fail(4 + 4 * static_cast<std::uint64_t>(rank), "truncated: the header's sizes need ",
                total, "+ bytes of data but the file has ", file.bytes.size(), " bytes in all");
    }
    array.dims.push_back(size);
  }
  const std::uint64_t data_at = r.offset();
  if (r.remaining() < total) {
    file.fail(file.bytes.size(), "truncated: the header's sizes need ", total,
              " bytes of data from byte offset ", data_at, " but the file ends after ",
              r.remaining());
  }
  if (r.remaining() > total) {
    file.fail(data_at + total, r.remaining() - total,
              " unexpected bytes after the data the header's sizes describe");
  }
  const std::uint8_t* data = r.take(total, "the data");
  array.data.assign(data, data + total);
  return array;
}

// What a gzipped IDX file may decompress to: what its header declares, once
// the header is in; before that, kMaxIdxBytes.
std::uint64_t idx_size_limit(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return kMaxIdxBytes;
  const std::uint64_t header = 4 + 4 * std::uint64_t{data[3]};
  if (size < header) return kMaxIdxBytes;
  std::uint64_t elements = 1;
  for (std::uint64_t at = 4; at < header; at += 4) {
    const std::uint64_t dim = (std::uint64_t{data[at]} << 24) | (std::uint64_t{data[at + 1]} << 16) |
                              (std::uint64_t{data[at + 2]} << 8) | data[at + 3];
    if (dim == 0) return header;  // parse_idx names the zero
    if (dim > kMaxIdxBytes / elements) return kMaxIdxBytes;
    elements *= dim;
  }
  return std::min(header + elements, kMaxIdxBytes);
}

detail::FileBytes read_idx_file(const std::string& path) {
  return detail::read_file(path, "IDX file", idx_size_limit);
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
  return Shape(dims).str();
}

// The first of `name` and `name.gz` that exists in root.
std::string find_file(const std::string& root, const std::string& name) {
  namespace fs = std::filesystem;
  for (const std::string& candidate : {name, name + ".gz"}) {
    const fs::path p = fs::path(root) / candidate;
    if (fs::exists(p)) return p.string();
  }
  CK_FAIL("MNIST-layout dataset: neither ", name, " nor ", name, ".gz exists in '", root,
          "' (the folder holds {train,t10k}-images-idx3-ubyte and {train,t10k}-labels-idx1-ubyte, "
          "each optionally gzipped as .gz)");
}

std::string split_prefix(Split split) { return split == Split::train ? "train" : "t10k"; }

}  // namespace

IdxArray read_idx(const std::string& path) {
  return parse_idx(read_idx_file(path));
}

IdxDataset::IdxDataset(const std::string& images_path, const std::string& labels_path,
                       std::int64_t num_classes, std::vector<std::string> class_names)
    : num_classes_(num_classes), class_names_(std::move(class_names)) {
  CK_CHECK(num_classes > 0 && num_classes <= 256, "IdxDataset: num_classes must be in [1, 256], got ",
           num_classes);
  CK_CHECK(class_names_.empty() || static_cast<std::int64_t>(class_names_.size()) == num_classes,
           "IdxDataset: ", class_names_.size(), " class names for ", num_classes, " classes");
  const detail::FileBytes image_file = read_idx_file(images_path);
  IdxArray images = parse_idx(image_file);
  if (images.dims.size() != 3) {
    image_file.fail(3, "expected images of rank 3 [N, H, W], got rank ", images.dims.size(), " ",
                    dims_text(images.dims));
  }
  const detail::FileBytes label_file = read_idx_file(labels_path);
  IdxArray labels = parse_idx(label_file);
  if (labels.dims.size() != 1) {
    label_file.fail(3, "expected labels of rank 1 [N], got rank ", labels.dims.size(), " ",
                    dims_text(labels.dims));
  }
  CK_CHECK(labels.dims[0] == images.dims[0], "IdxDataset: '", images_path, "' holds ",
           images.dims[0], " images but '", labels_path, "' holds ", labels.dims[0],
           " labels (counts at byte offset 4 of each)");
  const std::uint64_t label_data_at = 8;
  for (std::size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= num_classes) {
      label_file.fail(label_data_at + i, "label ", int{labels.data[i]}, " of example ", i,
                      " is outside [0, ", num_classes, ")");
    }
  }
  count_ = images.dims[0];
  height_ = images.dims[1];
  width_ = images.dims[2];
  pixels_ = std::move(images.data);
  labels_ = std::move(labels.data);
}

Example IdxDataset::get(std::int64_t index) const {
  check_index("IdxDataset", index, count_);
  const std::int64_t n = height_ * width_;
  return Example{detail::bytes_to_image(pixels_.data() + index * n, Shape{1, height_, width_}),
                 labels_[static_cast<std::size_t>(index)]};
}

MNIST::MNIST(const std::string& root, Split split)
    : IdxDataset(find_file(root, split_prefix(split) + "-images-idx3-ubyte"),
                 find_file(root, split_prefix(split) + "-labels-idx1-ubyte"), 10,
                 {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}) {}

FashionMNIST::FashionMNIST(Split split) : FashionMNIST(kFashionMNISTDefaultRoot, split) {}

FashionMNIST::FashionMNIST(const std::string& root, Split split)
    : IdxDataset(find_file(root, split_prefix(split) + "-images-idx3-ubyte"),
                 find_file(root, split_prefix(split) + "-labels-idx1-ubyte"), 10, names()) {}

std::vector<std::string> FashionMNIST::names() {
  return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
}

}  // namespace convkit::data
