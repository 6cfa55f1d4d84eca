#pragma once
// Whole-file reads for the data readers, with gzip recognised by its magic
// bytes and errors that name the file and the byte offset.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "convkit/core/error.h"

namespace convkit::data::detail {

// A file's contents, decompressed when it was gzipped.
struct FileBytes {
  std::string kind;  // "IDX file", "CIFAR-10 batch", ... for messages
  std::string path;
  bool gzipped = false;
  std::vector<std::uint8_t> bytes;

  // "byte offset 16" or "byte offset 16 of the decompressed data".
  std::string at(std::uint64_t offset) const;
  // Throws Error: "<kind> '<path>': <message> at <at(offset)>".
  template <typename... Args>
  [[noreturn]] void fail(std::uint64_t offset, Args&&... message) const {
    CK_FAIL(kind, " '", path, "': ", std::forward<Args>(message)..., " at ", at(offset));
  }
};

// The most bytes a file may decompress to, given the bytes decompressed so
// far (an IDX header declares its size). Gzip alone bounds nothing useful:
// deflate expands up to 1032-fold, so 10 MB of it can hold 10 GB.
using SizeLimit = std::function<std::uint64_t(const std::uint8_t* data, std::size_t size)>;

// The raw bytes of a file; throws Error naming it when it cannot be read.
std::vector<std::uint8_t> read_raw(const std::string& path, const std::string& kind);
// read_raw, then gunzip when the bytes start with the gzip magic 1f 8b.
// Running out of memory is an Error naming the file, not std::bad_alloc.
FileBytes read_file(const std::string& path, const std::string& kind, const SizeLimit& limit);
// Inflates every gzip member of `compressed`, failing once the output passes
// `limit`; errors give the offset in the compressed bytes.
std::vector<std::uint8_t> gunzip(const std::vector<std::uint8_t>& compressed,
                                 const std::string& path, const std::string& kind, const SizeLimit& limit);

// Sequential big-endian reads with bounds checks against a FileBytes.
class ByteReader {
 public:
  explicit ByteReader(const FileBytes& file) : file_(file) {}
  std::uint8_t u8(const char* field);
  std::uint32_t u32be(const char* field);
  // Pointer to the next n bytes, which must exist.
  const std::uint8_t* take(std::uint64_t n, const char* field);
  std::uint64_t offset() const { return offset_; }
  std::uint64_t remaining() const { return file_.bytes.size() - offset_; }

 private:
  void need(std::uint64_t n, const char* field) const;
  const FileBytes& file_;
  std::uint64_t offset_ = 0;
};

}  // namespace convkit::data::detail
