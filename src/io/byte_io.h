#pragma once
// Little-endian byte encoding and a bounds-checked file reader, shared by the
// checkpoint and safetensors code. Both formats store numbers and tensor data
// little-endian; tensor bytes are copied as they lie in memory, which is right
// on every host convkit runs on (x86-64, AArch64, and CUDA devices).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace convkit::io::detail {

static_assert(std::endian::native == std::endian::little,
              "convkit's file formats are little-endian and tensor bytes are copied as they are; "
              "a big-endian host needs byte swaps in src/io");

void put_u8(std::string& out, std::uint8_t v);
void put_u32(std::string& out, std::uint32_t v);
void put_u64(std::string& out, std::uint64_t v);
void put_i64(std::string& out, std::int64_t v);
// u32 length, then the bytes.
void put_string(std::string& out, const std::string& s);

std::uint32_t get_u32(const unsigned char* p);
std::uint64_t get_u64(const unsigned char* p);

// zlib's crc32 over any length (zlib takes at most 4 GiB per call).
std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t n);

// Reads a file front to back, knowing its size, so that every read can say
// exactly where the file ends short. Errors read
//   "<op>: <path>: at offset <n>: <what>".
class FileReader {
 public:
  FileReader(std::string path, std::string op);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  std::uint64_t size() const { return size_; }
  std::uint64_t offset() const { return offset_; }
  std::uint64_t remaining() const { return size_ - offset_; }
  // Reads exactly n bytes; throws "truncated" naming `what` when the file ends first.
  void read(void* dst, std::size_t n, const std::string& what);
  std::vector<unsigned char> read_bytes(std::size_t n, const std::string& what);
  [[noreturn]] void fail_at(std::uint64_t offset, const std::string& what) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_, op_;
  std::FILE* file_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t offset_ = 0;
};

}  // namespace convkit::io::detail
