#include "data/file_bytes.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

namespace convkit::data::detail {

std::string FileBytes::at(std::uint64_t offset) const {
  return gzipped ? convkit::detail::concat("byte offset ", offset, " of the decompressed data")
                 : convkit::detail::concat("byte offset ", offset);
}

std::vector<std::uint8_t> read_raw(const std::string& path, const std::string& kind) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  CK_CHECK(file != nullptr, kind, " '", path, "': cannot open: ", std::strerror(errno));
  std::vector<std::uint8_t> bytes;
  std::uint8_t chunk[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(chunk, 1, sizeof chunk, file.get());
    bytes.insert(bytes.end(), chunk, chunk + n);
    if (n < sizeof chunk) break;
  }
  CK_CHECK(!std::ferror(file.get()), kind, " '", path, "': read error after byte offset ",
           bytes.size(), ": ", std::strerror(errno));
  return bytes;
}

namespace {

bool has_gzip_magic(const std::uint8_t* p, std::size_t n) {
  return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

}  // namespace

std::vector<std::uint8_t> gunzip(const std::vector<std::uint8_t>& compressed,
                                 const std::string& path, const std::string& kind, const SizeLimit& limit) {
  auto fail = [&](std::size_t offset, const std::string& what) {
    CK_FAIL(kind, " '", path, "': ", what, " at byte offset ", offset,
            " of the gzip-compressed file");
  };
  z_stream zs{};
  // 15 + 16: a gzip wrapper (not zlib, not raw deflate) with the largest window.
  CK_CHECK(inflateInit2(&zs, 15 + 16) == Z_OK, kind, " '", path, "': zlib failed to initialise");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, &inflateEnd);

  // The trailer's ISIZE (length mod 2^32) sizes the output when plausible,
  // up to 64 MiB: it is unchecked until the end, and the limit may shrink
  // once a header is in.
  std::vector<std::uint8_t> out;
  std::uint64_t most = limit(nullptr, 0);
  if (compressed.size() >= 18) {
    const std::uint8_t* t = compressed.data() + compressed.size() - 4;
    const std::uint64_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (std::uint64_t{t[3]} << 24);
    if (isize <= 1100 * std::uint64_t{compressed.size()} && isize <= std::min<std::uint64_t>(most, 64u << 20)) {
      out.resize(isize + 1);
    }
  }
  if (out.size() < (1u << 16)) out.resize(1u << 16);

  std::size_t consumed = 0, produced = 0;
  for (;;) {
    zs.next_in = const_cast<Bytef*>(compressed.data() + consumed);
    zs.avail_in = static_cast<uInt>(std::min<std::size_t>(compressed.size() - consumed, UINT_MAX));
    // Grow by doubling, but never to more than a chunk past the limit.
    if (out.size() - produced < (1u << 16)) {
      out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(out.size() * 2, most + (1u << 17))));
    }
    zs.next_out = out.data() + produced;
    zs.avail_out = static_cast<uInt>(std::min<std::size_t>(out.size() - produced, UINT_MAX));
    const uInt in_before = zs.avail_in, out_before = zs.avail_out;
    const int ret = inflate(&zs, Z_NO_FLUSH);
    consumed += in_before - zs.avail_in;
    produced += out_before - zs.avail_out;
    most = limit(out.data(), produced);
    if (produced > most) {
      fail(consumed, convkit::detail::concat("the data decompresses to more than ", most,
                                             " bytes, the most this ", kind, " can hold (docs/data.md)"));
    }
    if (ret == Z_STREAM_END) {
      if (consumed == compressed.size()) break;
      // Concatenated gzip members decompress to the concatenation (RFC 1952).
      if (!has_gzip_magic(compressed.data() + consumed, compressed.size() - consumed)) {
        fail(consumed, convkit::detail::concat(compressed.size() - consumed,
                                      " unexpected bytes after the end of the gzip stream"));
      }
      CK_CHECK(inflateReset(&zs) == Z_OK, kind, " '", path, "': zlib reset failed");
      continue;
    }
    if (ret == Z_DATA_ERROR) {
      fail(consumed, convkit::detail::concat("corrupt gzip data (zlib: ", zs.msg ? zs.msg : "data error", ")"));
    }
    if (ret == Z_MEM_ERROR) fail(consumed, "out of memory while decompressing");
    if (ret != Z_OK && ret != Z_BUF_ERROR) fail(consumed, convkit::detail::concat("zlib error ", ret));
    // Output room left but no input: the stream was cut short.
    const bool stuck = in_before == zs.avail_in && out_before == zs.avail_out;
    if ((consumed == compressed.size() && zs.avail_out > 0) || stuck) {
      fail(consumed, "truncated gzip stream: the file ends before the compressed data does");
    }
  }
  out.resize(produced);
  return out;
}

FileBytes read_file(const std::string& path, const std::string& kind, const SizeLimit& limit) {
  FileBytes f;
  f.kind = kind;
  f.path = path;
  try {
    std::vector<std::uint8_t> raw = read_raw(path, kind);
    if (has_gzip_magic(raw.data(), raw.size())) {
      f.gzipped = true;
      f.bytes = gunzip(raw, path, kind, limit);
    } else {
      f.bytes = std::move(raw);
    }
  } catch (const std::bad_alloc&) {
    CK_FAIL(kind, " '", path, "': out of memory while ", f.gzipped ? "decompressing" : "reading", " it");
  }
  return f;
}

void ByteReader::need(std::uint64_t n, const char* field) const {
  if (remaining() < n) {
    file_.fail(offset_, "truncated: ", field, " needs ", n, " bytes but only ", remaining(),
               " remain (file has ", file_.bytes.size(), ")");
  }
}

std::uint8_t ByteReader::u8(const char* field) {
  need(1, field);
  return file_.bytes[offset_++];
}

std::uint32_t ByteReader::u32be(const char* field) {
  need(4, field);
  const std::uint8_t* p = file_.bytes.data() + offset_;
  offset_ += 4;
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

const std::uint8_t* ByteReader::take(std::uint64_t n, const char* field) {
  need(n, field);
  const std::uint8_t* p = file_.bytes.data() + offset_;
  offset_ += n;
  return p;
}

}  // namespace convkit::data::detail
