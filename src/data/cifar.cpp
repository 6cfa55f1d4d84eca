// CIFAR-10 binary batches.
#include "convkit/data/cifar.h"

#include <filesystem>
#include <fstream>

#include "data/file_bytes.h"
#include "data/pixels.h"

namespace convkit::data {

namespace {

namespace fs = std::filesystem;

// The largest gzipped batch file read: 1 GiB, 35 times a standard batch
// (10000 records).
constexpr std::uint64_t kMaxBatchBytes = std::uint64_t{1} << 30;

std::vector<std::string> standard_names() {
  return {"airplane", "automobile", "bird", "cat", "deer",
          "dog",      "frog",       "horse", "ship", "truck"};
}

// root itself, or root/cifar-10-batches-bin as the archive unpacks.
fs::path batches_dir(const std::string& root) {
  const fs::path nested = fs::path(root) / "cifar-10-batches-bin";
  return fs::is_directory(nested) ? nested : fs::path(root);
}

std::vector<std::string> split_files(const std::string& root, Split split) {
  const fs::path dir = batches_dir(root);
  std::vector<std::string> names;
  if (split == Split::train) {
    for (int i = 1; i <= 5; ++i) names.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    names.push_back("test_batch.bin");
  }
  std::vector<std::string> files;
  for (const std::string& name : names) {
    const fs::path p = dir / name;
    CK_CHECK(fs::exists(p), "CIFAR10: '", p.string(), "' does not exist (expected ",
             split == Split::train ? "data_batch_1.bin .. data_batch_5.bin" : "test_batch.bin",
             " in '", root, "' or its cifar-10-batches-bin/ subfolder)");
    files.push_back(p.string());
  }
  return files;
}

std::vector<std::string> read_names(const fs::path& meta) {
  std::vector<std::string> names;
  std::ifstream in(meta);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

}  // namespace

CIFAR10::CIFAR10(const std::string& root, Split split) {
  load(split_files(root, split));
  const fs::path meta = batches_dir(root) / "batches.meta.txt";
  if (fs::exists(meta)) {
    std::vector<std::string> names = read_names(meta);
    CK_CHECK(names.size() == 10, "CIFAR10: '", meta.string(), "' lists ", names.size(),
             " class names, expected 10");
    class_names_ = std::move(names);
  }
}

CIFAR10::CIFAR10(const std::vector<std::string>& files) { load(files); }

void CIFAR10::load(const std::vector<std::string>& files) {
  CK_CHECK(!files.empty(), "CIFAR10: no batch files given");
  class_names_ = standard_names();
  constexpr std::size_t kPixels = kRecordBytes - 1;
  for (const std::string& path : files) {
    const detail::FileBytes file = detail::read_file(path, "CIFAR-10 batch", [](const std::uint8_t*, std::size_t) {
      return kMaxBatchBytes;
    });
    const std::size_t n = file.bytes.size();
    if (n == 0) file.fail(0, "empty file (records are ", kRecordBytes, " bytes)");
    if (n % kRecordBytes != 0) {
      file.fail(n - n % kRecordBytes, "truncated: ", n, " bytes is not a whole number of ",
                kRecordBytes, "-byte records; the last record is incomplete, starting");
    }
    pixels_.reserve(pixels_.size() + n / kRecordBytes * kPixels);
    for (std::size_t at = 0; at < n; at += kRecordBytes) {
      const std::uint8_t label = file.bytes[at];
      if (label > 9) file.fail(at, "label ", int{label}, " is not a CIFAR-10 class (0..9)");
      labels_.push_back(label);
      pixels_.insert(pixels_.end(), file.bytes.begin() + static_cast<std::ptrdiff_t>(at + 1),
                     file.bytes.begin() + static_cast<std::ptrdiff_t>(at + 1 + kPixels));
    }
  }
}

Example CIFAR10::get(std::int64_t index) const {
  check_index("CIFAR10", index, size());
  constexpr std::int64_t kPixels = kRecordBytes - 1;
  return Example{detail::bytes_to_image(pixels_.data() + index * kPixels, Shape{3, 32, 32}),
                 labels_[static_cast<std::size_t>(index)]};
}

}  // namespace convkit::data
