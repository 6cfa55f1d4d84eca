#include "io/byte_io.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>

#include "convkit/core/error.h"

namespace convkit::io::detail {

void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void put_i64(std::string& out, std::int64_t v) { put_u64(out, static_cast<std::uint64_t>(v)); }

void put_string(std::string& out, const std::string& s) {
  CK_CHECK(s.size() <= std::numeric_limits<std::uint32_t>::max(), "string of ", s.size(),
           " bytes is too long for a file string (at most 4 GiB)");
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out += s;
}

std::uint32_t get_u32(const unsigned char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint64_t get_u64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t n) {
  const auto* bytes = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (n > 0) {
    const std::size_t chunk = std::min<std::size_t>(n, std::size_t{1} << 30);
    c = ::crc32(c, bytes, static_cast<uInt>(chunk));
    bytes += chunk;
    n -= chunk;
  }
  return static_cast<std::uint32_t>(c);
}

FileReader::FileReader(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
  std::error_code ec;
  CK_CHECK(!std::filesystem::is_directory(path_, ec), op_, ": ", path_, ": is a directory, not a file");
  file_ = std::fopen(path_.c_str(), "rb");
  if (!file_) CK_FAIL(op_, ": ", path_, ": cannot open: ", std::strerror(errno));
  const auto size = std::filesystem::file_size(path_, ec);
  if (ec) {
    std::fclose(file_);
    CK_FAIL(op_, ": ", path_, ": cannot read its size: ", ec.message());
  }
  size_ = size;
}

FileReader::~FileReader() {
  if (file_) std::fclose(file_);
}

void FileReader::fail_at(std::uint64_t offset, const std::string& what) const {
  CK_FAIL(op_, ": ", path_, ": at offset ", offset, ": ", what);
}

void FileReader::read(void* dst, std::size_t n, const std::string& what) {
  if (n > remaining()) {
    fail_at(offset_, "truncated: expected " + std::to_string(n) + " bytes of " + what + ", but the file ends after " +
                         std::to_string(remaining()) + " (file size " + std::to_string(size_) + ")");
  }
  if (n > 0 && std::fread(dst, 1, n, file_) != n) {
    fail_at(offset_, "read error in " + what + ": " + std::strerror(errno));
  }
  offset_ += n;
}

std::vector<unsigned char> FileReader::read_bytes(std::size_t n, const std::string& what) {
  if (n > remaining()) read(nullptr, n, what);  // throws the truncation error before allocating
  std::vector<unsigned char> out;
  try {
    out.resize(n);
  } catch (const std::bad_alloc&) {
    // A large file on a small machine: an error, not std::terminate.
    fail_at(offset_, "out of memory allocating " + std::to_string(n) + " bytes for " + what);
  }
  read(out.data(), n, what);
  return out;
}

}  // namespace convkit::io::detail
