#pragma once
// Test helpers: a scratch directory removed afterwards, and writers for the
// file formats the readers parse (IDX, gzip, PNG, JPEG).
#include <cstdint>
#include <string>
#include <vector>

#include "support/support.h"

namespace convkit::testing {

// A fresh directory under $TMPDIR (or /tmp), deleted with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

using Bytes = std::vector<std::uint8_t>;

void write_bytes(const std::string& path, const Bytes& bytes);
Bytes read_bytes(const std::string& path);
Bytes gzip(const Bytes& bytes);

// An unsigned-byte IDX file: 00 00 08 rank, big-endian sizes, data.
Bytes idx_bytes(const std::vector<std::uint32_t>& dims, const Bytes& data);

// PNG of `channels` (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA) interleaved 8-bit
// samples, or a 16-bit one when samples16 is given.
Bytes png_bytes(std::uint32_t width, std::uint32_t height, int channels, const Bytes& samples);
Bytes png16_bytes(std::uint32_t width, std::uint32_t height, const std::vector<std::uint16_t>& rgb);
// Paletted 8-bit PNG: `palette` holds RGB triples, `alpha` the tRNS entries
// (none: no tRNS chunk), `indices` one byte per pixel.
Bytes png_palette_bytes(std::uint32_t width, std::uint32_t height, const Bytes& palette, const Bytes& alpha,
                        const Bytes& indices);
// One PNG chunk as it lies in a file: length, type, data, CRC. `length`
// overrides the written length (a chunk that claims more than it holds).
Bytes png_chunk(const std::string& type, const Bytes& data, std::int64_t length = -1);
// Baseline (or progressive) JPEG, quality 100, of interleaved RGB
// (components 3) or gray (1).
Bytes jpeg_bytes(std::uint32_t width, std::uint32_t height, int components, const Bytes& samples,
                 bool progressive = false);

// gtest: the exception's message contains every part.
#define EXPECT_ERROR_MENTIONS(stmt, ...)                                            \
  do {                                                                              \
    try {                                                                           \
      stmt;                                                                         \
      ADD_FAILURE() << "expected convkit::Error from " #stmt;                       \
    } catch (const ::convkit::Error& e) {                                           \
      for (const std::string& part : std::vector<std::string>{__VA_ARGS__}) {       \
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos)              \
            << "message '" << e.what() << "' lacks '" << part << "'";               \
      }                                                                             \
    }                                                                               \
  } while (0)

}  // namespace convkit::testing
