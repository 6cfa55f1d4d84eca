#include "convkit/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "convkit/core/error.h"
#include "io/atomic_file.h"
#include "io/byte_io.h"
#include "io/json.h"

namespace convkit::io {

namespace {

// The reference implementation refuses larger headers; so do we, before parsing.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";

const char* safetensors_dtype(DType t) {
  switch (t) {
    case DType::float32: return "F32";
    case DType::float64: return "F64";
    case DType::int64: return "I64";
  }
  return "?";
}

bool dtype_from_safetensors(const std::string& name, DType& out) {
  if (name == "F32") {
    out = DType::float32;
  } else if (name == "F64") {
    out = DType::float64;
  } else if (name == "I64") {
    out = DType::int64;
  } else {
    return false;
  }
  return true;
}

struct Entry {
  std::string name;
  DType dtype = DType::float32;
  Shape shape;
  std::uint64_t begin = 0, end = 0;
};

}  // namespace

std::vector<std::uint8_t> safetensors_bytes(const StateDict& tensors,
                                            const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  std::vector<Tensor> host;
  std::string header = "{";
  if (!metadata.empty()) {
    header += json::quote(kMetadataKey) + ":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      header += json::quote(k);
      header += ':';
      header += json::quote(v);
      first = false;
    }
    header += "}";
  }
  std::uint64_t offset = 0;
  for (const auto& [name, value] : tensors) {
    CK_CHECK(!name.empty(), "safetensors: a tensor has an empty name");
    CK_CHECK(name != kMetadataKey, "safetensors: '", kMetadataKey, "' is reserved and cannot name a tensor");
    CK_CHECK(names.insert(name).second, "safetensors: tensor '", name, "' appears twice");
    CK_CHECK(value.defined(), "safetensors: tensor '", name, "' is undefined");
    const Tensor t = value.detach().to(kCPU).contiguous();
    const std::uint64_t bytes = static_cast<std::uint64_t>(t.numel()) * dtype_size(t.dtype());
    if (header.size() > 1) header += ",";
    header += json::quote(name) + ":{\"dtype\":\"" + safetensors_dtype(t.dtype()) + "\",\"shape\":[";
    for (std::int64_t d = 0; d < t.dim(); ++d) {
      if (d) header += ',';
      header += std::to_string(t.size(d));
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
    host.push_back(t);
  }
  header += "}";
  // Spaces after the JSON so the data starts 8-byte aligned, as the reference writer does.
  header.append((8 - header.size() % 8) % 8, ' ');

  std::vector<std::uint8_t> out;
  out.reserve(8 + header.size() + offset);
  std::string length;
  detail::put_u64(length, header.size());
  out.insert(out.end(), length.begin(), length.end());
  out.insert(out.end(), header.begin(), header.end());
  for (const Tensor& t : host) {
    const auto* data = static_cast<const std::uint8_t*>(t.numel() ? t.raw_data() : nullptr);
    out.insert(out.end(), data, data + t.numel() * static_cast<std::int64_t>(dtype_size(t.dtype())));
  }
  return out;
}

SafetensorsFile parse_safetensors(const std::vector<std::uint8_t>& bytes, const std::string& source) {
  const std::string where = "safetensors: " + source;
  CK_CHECK(bytes.size() >= 8, where, ": the file is ", bytes.size(),
           " bytes, shorter than the 8-byte header length");
  const std::uint64_t header_bytes = detail::get_u64(bytes.data());
  CK_CHECK(header_bytes <= kMaxHeaderBytes, where, ": at offset 0: header length ", header_bytes,
           " exceeds the format's limit of ", kMaxHeaderBytes, " bytes (not a safetensors file?)");
  CK_CHECK(header_bytes <= bytes.size() - 8, where, ": at offset 0: header length ", header_bytes,
           " runs past the end of the file (", bytes.size(), " bytes): truncated?");
  CK_CHECK(header_bytes > 0 && bytes[8] == '{', where, ": at offset 8: the header must be a JSON object starting with '{'");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), header_bytes);
  const json::Value root = json::parse(text, where + ": header", 8);
  CK_CHECK(root.kind == json::Value::Kind::object, where, ": at offset 8: the header must be a JSON object");

  const std::uint64_t data_start = 8 + header_bytes;
  const std::uint64_t buffer_bytes = bytes.size() - data_start;
  SafetensorsFile file;
  std::vector<Entry> entries;
  for (const auto& [name, v] : root.members) {
    auto fail_at = [&](const json::Value& at, const std::string& what) {
      CK_FAIL(where, ": at offset ", at.position, ": ", what);
    };
    if (name == kMetadataKey) {
      if (v.kind != json::Value::Kind::object) fail_at(v, "__metadata__ must be an object of strings");
      for (const auto& [k, mv] : v.members) {
        if (mv.kind != json::Value::Kind::string) {
          fail_at(mv, "__metadata__ value of \"" + k + "\" must be a string, got " + json::kind_name(mv.kind));
        }
        file.metadata[k] = mv.text;
      }
      continue;
    }
    const std::string label = "tensor '" + name + "'";
    // safetensors_bytes refuses an empty name; so does the reader.
    if (name.empty()) fail_at(v, "a tensor has an empty name");
    if (v.kind != json::Value::Kind::object) fail_at(v, label + " must be an object");
    Entry e;
    e.name = name;
    const json::Value* dtype = v.find("dtype");
    if (!dtype || dtype->kind != json::Value::Kind::string) fail_at(v, label + " needs a string \"dtype\"");
    if (!dtype_from_safetensors(dtype->text, e.dtype)) {
      fail_at(*dtype, label + " has dtype " + dtype->text + ", which convkit does not read (F32, F64, I64)");
    }
    const json::Value* shape = v.find("shape");
    if (!shape || shape->kind != json::Value::Kind::array) fail_at(v, label + " needs an array \"shape\"");
    // The product of the non-zero dimensions is bounded too: [0, 2^56, 2^56]
    // holds no data, yet its strides would overflow.
    std::uint64_t nonzero = 1;
    bool empty = false;
    for (const auto& d : shape->items) {
      std::uint64_t dim = 0;
      if (!d.to_uint64(dim) || dim > (std::uint64_t{1} << 56)) {
        fail_at(d, label + " has a bad dimension in its shape (not a non-negative integer)");
      }
      if (dim > 0 && nonzero > (std::uint64_t{1} << 56) / dim) fail_at(d, label + " has too many elements");
      if (dim == 0) empty = true;
      if (dim > 0) nonzero *= dim;
      e.shape.dims().push_back(static_cast<std::int64_t>(dim));
    }
    const std::uint64_t numel = empty ? 0 : nonzero;
    const json::Value* offsets = v.find("data_offsets");
    if (!offsets || offsets->kind != json::Value::Kind::array || offsets->items.size() != 2 ||
        !offsets->items[0].to_uint64(e.begin) || !offsets->items[1].to_uint64(e.end)) {
      fail_at(offsets ? *offsets : v, label + " needs \"data_offsets\": [begin, end] with non-negative integers");
    }
    if (e.begin > e.end) {
      fail_at(*offsets, label + " has data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                            "] that end before they begin");
    }
    const std::uint64_t expected = numel * dtype_size(e.dtype);
    if (e.end - e.begin != expected) {
      fail_at(*offsets, label + " spans " + std::to_string(e.end - e.begin) + " bytes, but shape " +
                            e.shape.str() + " " + dtype->text + " needs " + std::to_string(expected));
    }
    if (e.end > buffer_bytes) {
      fail_at(*offsets, label + " ends at data offset " + std::to_string(e.end) + ", past the end of the " +
                            std::to_string(buffer_bytes) + "-byte data buffer (truncated file?)");
    }
    entries.push_back(std::move(e));
  }

  // The buffer must be exactly the tensors, packed: no gaps, no overlaps, nothing after.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t cursor = 0;
  std::string previous;
  for (const Entry& e : entries) {
    CK_CHECK(e.begin >= cursor, where, ": tensor '", e.name, "' (data offsets ", e.begin, "..", e.end,
             ") overlaps tensor '", previous, "', which ends at ", cursor);
    CK_CHECK(e.begin == cursor, where, ": a gap of ", e.begin - cursor, " bytes in the data buffer before tensor '",
             e.name, "' (starts at ", e.begin, ", the previous tensor ends at ", cursor, ")");
    cursor = e.end;
    previous = e.name;
  }
  CK_CHECK(cursor == buffer_bytes, where, ": the data buffer holds ", buffer_bytes, " bytes but the tensors cover ",
           cursor, " (", buffer_bytes - cursor, " unexplained bytes at the end)");

  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.raw_data(), bytes.data() + data_start + e.begin, e.end - e.begin);
    file.tensors.emplace_back(e.name, t);
  }
  return file;
}

void save_safetensors(const std::string& path, const StateDict& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::vector<std::uint8_t> bytes = safetensors_bytes(tensors, metadata);
  detail::AtomicFile file(path, "save_safetensors");
  file.write(bytes.data(), bytes.size());
  file.commit();
}

SafetensorsFile load_safetensors(const std::string& path) {
  detail::FileReader reader(path, "load_safetensors");
  const auto bytes = reader.read_bytes(static_cast<std::size_t>(reader.size()), "the file");
  return parse_safetensors(bytes, path);
}

}  // namespace convkit::io
