// The checkpoint file format, version 1 (docs/io.md has the byte layout):
//   magic (8) | u32 version | sections ... | END section
//   section = 4-byte tag | u64 payload length L | L payload bytes | u32 CRC-32 of the payload
// Every number is little-endian. One section per tensor, so a damaged tensor is
// reported by name and a reader streams each tensor straight into its storage.
#include "convkit/io/checkpoint.h"

#include <cstring>
#include <set>
#include <unordered_set>

#include "convkit/core/error.h"
#include "convkit/nn/model_spec.h"
#include "convkit/nn/module.h"
#include "convkit/optim/optimizer.h"
#include "convkit/optim/optimizer_spec.h"
#include "io/atomic_file.h"
#include "io/byte_io.h"

namespace convkit::io {

namespace {

using detail::FileReader;

constexpr char kMagic[8] = {'\x89', 'C', 'K', 'P', 'T', '\r', '\n', '\x1a'};

constexpr char kSpec[4] = {'S', 'P', 'E', 'C'};  // model spec text
constexpr char kPrep[4] = {'P', 'R', 'E', 'P'};  // Preprocessing::to_string()
constexpr char kTensor[4] = {'T', 'N', 'S', 'R'};  // one model state_dict tensor
constexpr char kOptSpec[4] = {'O', 'P', 'T', 'S'};  // optimizer spec text
constexpr char kOptTensor[4] = {'O', 'T', 'N', 'S'};  // one optimizer state_dict tensor
constexpr char kTrain[4] = {'T', 'R', 'S', 'T'};  // epoch, step, generator seed and offset
constexpr char kMeta[4] = {'M', 'E', 'T', 'A'};  // key/value strings
constexpr char kEnd[4] = {'E', 'N', 'D', ' '};

// Stable codes, independent of the DType enum's order.
std::uint8_t dtype_code(DType t) {
  switch (t) {
    case DType::float32: return 1;
    case DType::float64: return 2;
    case DType::int64: return 3;
  }
  CK_FAIL("save_checkpoint: dtype ", t, " has no checkpoint code");
}

bool dtype_from_code(std::uint8_t code, DType& out) {
  switch (code) {
    case 1: out = DType::float32; return true;
    case 2: out = DType::float64; return true;
    case 3: out = DType::int64; return true;
    default: return false;
  }
}

std::string printable_tag(const unsigned char* tag) {
  std::string out;
  for (int i = 0; i < 4; ++i) {
    const unsigned char c = tag[i];
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

// ------------------------------------------------------------------ writing

class Writer {
 public:
  explicit Writer(detail::AtomicFile& file) : file_(file) {}

  void section(const char tag[4], const std::string& payload) {
    header(tag, payload.size());
    file_.write(payload);
    trailer(detail::crc32_update(0, payload.data(), payload.size()));
  }

  void tensor(const char tag[4], const std::string& name, const Tensor& value) {
    CK_CHECK(value.defined(), "save_checkpoint: tensor '", name, "' is undefined");
    const Tensor t = value.detach().to(kCPU).contiguous();
    std::string head;
    detail::put_string(head, name);
    detail::put_u8(head, dtype_code(t.dtype()));
    CK_CHECK(t.dim() <= 255, "save_checkpoint: tensor '", name, "' has ", t.dim(), " dims (at most 255)");
    detail::put_u8(head, static_cast<std::uint8_t>(t.dim()));
    for (auto d : t.shape()) detail::put_i64(head, d);
    const std::size_t data_bytes = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
    header(tag, head.size() + data_bytes);
    file_.write(head);
    const void* data = data_bytes ? t.raw_data() : nullptr;
    if (data_bytes) file_.write(data, data_bytes);
    trailer(detail::crc32_update(detail::crc32_update(0, head.data(), head.size()), data, data_bytes));
  }

 private:
  void header(const char tag[4], std::uint64_t length) {
    std::string h(tag, 4);
    detail::put_u64(h, length);
    file_.write(h);
  }
  void trailer(std::uint32_t crc) {
    std::string t;
    detail::put_u32(t, crc);
    file_.write(t);
  }

  detail::AtomicFile& file_;
};

// ------------------------------------------------------------------ reading

// A section's payload held in memory (all but tensors), with the file offset
// it starts at, so that a field that runs past its section is located.
class Payload {
 public:
  Payload(const FileReader& file, std::uint64_t start, std::vector<unsigned char> bytes, std::string what)
      : file_(file), start_(start), bytes_(std::move(bytes)), what_(std::move(what)) {}

  std::uint64_t offset() const { return start_ + pos_; }
  bool done() const { return pos_ == bytes_.size(); }
  void need(std::size_t n, const char* field) const {
    if (n > bytes_.size() - pos_) {
      file_.fail_at(offset(), std::string(field) + " runs past the end of the " + what_ + " section");
    }
  }
  std::uint32_t u32(const char* field) {
    need(4, field);
    pos_ += 4;
    return detail::get_u32(&bytes_[pos_ - 4]);
  }
  std::uint64_t u64(const char* field) {
    need(8, field);
    pos_ += 8;
    return detail::get_u64(&bytes_[pos_ - 8]);
  }
  std::string string(const char* field) {
    const std::uint32_t n = u32(field);
    need(n, field);
    std::string s(reinterpret_cast<const char*>(&bytes_[pos_]), n);
    pos_ += n;
    return s;
  }
  std::string rest() {
    std::string s(bytes_.begin() + static_cast<std::ptrdiff_t>(pos_), bytes_.end());
    pos_ = bytes_.size();
    return s;
  }
  void expect_done() const {
    if (!done()) {
      file_.fail_at(offset(), std::to_string(bytes_.size() - pos_) + " unexpected bytes at the end of the " + what_ +
                                  " section");
    }
  }

 private:
  const FileReader& file_;
  std::uint64_t start_;
  std::vector<unsigned char> bytes_;
  std::size_t pos_ = 0;
  std::string what_;
};

class Reader {
 public:
  explicit Reader(const std::string& path) : file_(path, "load_checkpoint") {}

  Checkpoint read() {
    unsigned char magic[8];
    if (file_.size() < sizeof magic) {
      file_.fail_at(0, "not a convkit checkpoint: the file is " + std::to_string(file_.size()) +
                           " bytes, shorter than the 8-byte magic");
    }
    file_.read(magic, sizeof magic, "the magic");
    if (std::memcmp(magic, kMagic, sizeof magic) != 0) {
      file_.fail_at(0, "bad magic: not a convkit checkpoint (expected \\x89CKPT\\r\\n\\x1A)");
    }
    unsigned char version_bytes[4];
    file_.read(version_bytes, 4, "the format version");
    const std::uint32_t version = detail::get_u32(version_bytes);
    if (version == 0) {
      file_.fail_at(8, "checkpoint format version 0, which no convkit writes (versions start at 1): "
                       "the header is damaged");
    }
    if (version > kCheckpointVersion) {
      file_.fail_at(8, "unsupported checkpoint format version " + std::to_string(version) +
                           " (this build reads versions 1 to " + std::to_string(kCheckpointVersion) +
                           "; a newer convkit wrote it?)");
    }

    Checkpoint ck;
    std::set<std::string> seen;
    std::unordered_set<std::string> model_names, optimizer_names;
    for (;;) {
      const std::uint64_t at = file_.offset();
      if (file_.remaining() == 0) {
        file_.fail_at(at, "truncated: the file ends before the END section (" + std::to_string(file_.size()) +
                              " bytes)");
      }
      unsigned char tag[4];
      file_.read(tag, 4, "a section tag");
      unsigned char length_bytes[8];
      file_.read(length_bytes, 8, "the length of section '" + printable_tag(tag) + "'");
      const std::uint64_t length = detail::get_u64(length_bytes);
      const std::string name = printable_tag(tag);
      if (length > file_.remaining() || file_.remaining() - length < 4) {
        file_.fail_at(at, "truncated: section '" + name + "' declares " + std::to_string(length) +
                              " payload bytes plus a 4-byte CRC, but only " + std::to_string(file_.remaining()) +
                              " bytes follow (file size " + std::to_string(file_.size()) + ")");
      }
      const bool repeatable = std::memcmp(tag, kTensor, 4) == 0 || std::memcmp(tag, kOptTensor, 4) == 0;
      if (!repeatable && !seen.insert(name).second) file_.fail_at(at, "section '" + name + "' appears twice");

      if (std::memcmp(tag, kTensor, 4) == 0) {
        ck.model_state.push_back(read_tensor(at, length, "model"));
        check_unique(model_names, ck.model_state.back().first, at);
      } else if (std::memcmp(tag, kOptTensor, 4) == 0) {
        ck.optimizer_state.push_back(read_tensor(at, length, "optimizer"));
        check_unique(optimizer_names, ck.optimizer_state.back().first, at);
      } else if (std::memcmp(tag, kEnd, 4) == 0) {
        read_payload(at, length, "END");
        break;
      } else if (std::memcmp(tag, kSpec, 4) == 0) {
        ck.model_spec = read_payload(at, length, "model spec").rest();
      } else if (std::memcmp(tag, kOptSpec, 4) == 0) {
        ck.optimizer_spec = read_payload(at, length, "optimizer spec").rest();
      } else if (std::memcmp(tag, kPrep, 4) == 0) {
        Payload p = read_payload(at, length, "preprocessing");
        const std::uint64_t text_at = p.offset();
        try {
          ck.preprocessing = data::Preprocessing::parse(p.rest());
        } catch (const Error& e) {
          file_.fail_at(text_at, std::string("bad preprocessing: ") + e.what());
        }
      } else if (std::memcmp(tag, kTrain, 4) == 0) {
        Payload p = read_payload(at, length, "training state");
        ck.epoch = static_cast<std::int64_t>(p.u64("the epoch"));
        ck.step = static_cast<std::int64_t>(p.u64("the step"));
        ck.generator.seed = p.u64("the generator seed");
        ck.generator.offset = p.u64("the generator offset");
        p.expect_done();
      } else if (std::memcmp(tag, kMeta, 4) == 0) {
        Payload p = read_payload(at, length, "metadata");
        const std::uint32_t count = p.u32("the metadata count");
        std::unordered_set<std::string> keys;
        for (std::uint32_t i = 0; i < count; ++i) {
          const std::uint64_t key_at = p.offset();
          std::string key = p.string("a metadata key");
          // save_checkpoint refuses duplicates; a file with them was not written by it.
          if (!keys.insert(key).second) file_.fail_at(key_at, "metadata key '" + key + "' appears twice");
          std::string value = p.string("a metadata value");
          ck.metadata.emplace_back(std::move(key), std::move(value));
        }
        p.expect_done();
      } else {
        file_.fail_at(at, "unknown section tag '" + name + "' (a corrupt file?)");
      }
    }
    if (file_.remaining() != 0) {
      file_.fail_at(file_.offset(), std::to_string(file_.remaining()) + " unexpected bytes after the END section");
    }
    if (!seen.count(printable_tag(reinterpret_cast<const unsigned char*>(kSpec)))) {
      file_.fail_at(file_.offset(), "the file has no model spec section (SPEC)");
    }
    if (!seen.count(printable_tag(reinterpret_cast<const unsigned char*>(kTrain)))) {
      file_.fail_at(file_.offset(), "the file has no training state section (TRST)");
    }
    if (ck.optimizer_spec.empty() && !ck.optimizer_state.empty()) {
      file_.fail_at(file_.offset(), "the file has optimizer tensors but no optimizer spec");
    }
    return ck;
  }

 private:
  void check_crc(std::uint64_t section_at, std::uint32_t crc, const std::string& what) {
    unsigned char stored_bytes[4];
    const std::uint64_t crc_at = file_.offset();
    file_.read(stored_bytes, 4, "the CRC of " + what);
    const std::uint32_t stored = detail::get_u32(stored_bytes);
    if (stored != crc) {
      char stored_hex[16], computed_hex[16];
      std::snprintf(stored_hex, sizeof stored_hex, "%08X", stored);
      std::snprintf(computed_hex, sizeof computed_hex, "%08X", crc);
      file_.fail_at(section_at, "CRC mismatch in " + what + " (stored CRC " + stored_hex + " at offset " +
                                    std::to_string(crc_at) + ", computed " + computed_hex + "): the file is corrupt");
    }
  }

  Payload read_payload(std::uint64_t section_at, std::uint64_t length, const std::string& what) {
    const std::uint64_t start = file_.offset();
    auto bytes = file_.read_bytes(static_cast<std::size_t>(length), "the " + what + " section");
    check_crc(section_at, detail::crc32_update(0, bytes.data(), bytes.size()), "the " + what + " section");
    return Payload(file_, start, std::move(bytes), what);
  }

  // Streams the tensor's data straight into a new cpu tensor.
  NamedTensor read_tensor(std::uint64_t section_at, std::uint64_t length, const char* owner) {
    const std::uint64_t start = file_.offset();
    std::uint32_t crc = 0;
    auto take = [&](void* dst, std::size_t n, const std::string& field) {
      if (file_.offset() + n > start + length) {
        file_.fail_at(file_.offset(), field + " runs past the end of its " + std::string(owner) + " tensor section");
      }
      file_.read(dst, n, field);
      crc = detail::crc32_update(crc, dst, n);
    };
    unsigned char u32[4];
    take(u32, 4, "a tensor name length");
    const std::uint32_t name_length = detail::get_u32(u32);
    if (name_length > length - 4) {
      file_.fail_at(file_.offset() - 4, "a tensor name of " + std::to_string(name_length) +
                                            " bytes runs past the end of its " + owner + " tensor section");
    }
    std::string name(name_length, '\0');
    take(name.data(), name.size(), "a tensor name");
    const std::string label = std::string(owner) + " tensor '" + name + "'";
    std::uint8_t code = 0, rank = 0;
    take(&code, 1, "the dtype of " + label);
    take(&rank, 1, "the rank of " + label);
    DType dtype = DType::float32;
    if (!dtype_from_code(code, dtype)) {
      file_.fail_at(file_.offset() - 2, "unknown dtype code " + std::to_string(code) + " in " + label);
    }
    std::vector<std::int64_t> dims(rank);
    // The product of the non-zero dimensions is bounded too: [0, 2^56, 2^56]
    // holds no data, yet its strides would overflow.
    std::uint64_t nonzero = 1;
    bool empty = false;
    for (auto& d : dims) {
      unsigned char b[8];
      take(b, 8, "the shape of " + label);
      d = static_cast<std::int64_t>(detail::get_u64(b));
      if (d < 0 || (d > 0 && nonzero > (std::uint64_t{1} << 56) / static_cast<std::uint64_t>(d))) {
        file_.fail_at(file_.offset() - 8, "bad dimension " + std::to_string(d) + " in the shape of " + label);
      }
      if (d == 0) empty = true;
      if (d > 0) nonzero *= static_cast<std::uint64_t>(d);
    }
    const std::uint64_t numel = empty ? 0 : nonzero;
    const std::uint64_t data_bytes = numel * dtype_size(dtype);
    const std::uint64_t head_bytes = file_.offset() - start;
    if (head_bytes + data_bytes != length) {
      file_.fail_at(section_at, "the section of " + label + " holds " + std::to_string(length - head_bytes) +
                                    " data bytes, but shape " + Shape(dims).str() + " " +
                                    std::string(dtype_name(dtype)) + " needs " + std::to_string(data_bytes));
    }
    Tensor t = Tensor::empty(Shape(dims), dtype);
    if (data_bytes) take(t.raw_data(), static_cast<std::size_t>(data_bytes), "the data of " + label);
    check_crc(section_at, crc, label);
    return {name, t};
  }

  void check_unique(std::unordered_set<std::string>& names, const std::string& name, std::uint64_t at) {
    if (!names.insert(name).second) file_.fail_at(at, "tensor '" + name + "' appears twice");
  }

  FileReader file_;
};

}  // namespace

void Checkpoint::set_metadata(const std::string& key, const std::string& value) {
  for (auto& [k, v] : metadata) {
    if (k == key) {
      v = value;
      return;
    }
  }
  metadata.emplace_back(key, value);
}

std::optional<std::string> Checkpoint::get_metadata(const std::string& key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return v;
  }
  return std::nullopt;
}

Checkpoint make_checkpoint(const nn::Module& model, const optim::Optimizer* optimizer,
                           std::optional<data::Preprocessing> preprocessing) {
  Checkpoint ck;
  ck.preprocessing = std::move(preprocessing);
  try {
    ck.model_spec = model.spec();
  } catch (const Error&) {
    // A module type of the user's own without spec(): keep the weights, which
    // load into a model built in code; build_model() says why it cannot.
    ck.model_spec.clear();
  }
  ck.model_state = model.state_dict();
  if (optimizer) {
    ck.optimizer_spec = optim::optimizer_spec(*optimizer);
    ck.optimizer_state = optimizer->state_dict();
  }
  ck.generator = default_generator();
  return ck;
}

void save_checkpoint(const std::string& path, const Checkpoint& ck) {
  CK_CHECK(!ck.optimizer_spec.empty() || ck.optimizer_state.empty(), "save_checkpoint: '", path,
           "': optimizer_state is set but optimizer_spec is empty");
  std::set<std::string> keys;
  for (const auto& [k, v] : ck.metadata) {
    CK_CHECK(keys.insert(k).second, "save_checkpoint: '", path, "': metadata key '", k, "' appears twice");
  }
  for (const StateDict* dict : {&ck.model_state, &ck.optimizer_state}) {
    std::set<std::string> names;
    for (const auto& [name, t] : *dict) {
      CK_CHECK(names.insert(name).second, "save_checkpoint: '", path, "': tensor '", name, "' appears twice");
    }
  }

  detail::AtomicFile file(path, "save_checkpoint");
  std::string head(kMagic, sizeof kMagic);
  detail::put_u32(head, kCheckpointVersion);
  file.write(head);

  Writer w(file);
  w.section(kSpec, ck.model_spec);
  if (ck.preprocessing) w.section(kPrep, ck.preprocessing->to_string());
  for (const auto& [name, t] : ck.model_state) w.tensor(kTensor, name, t);
  if (!ck.optimizer_spec.empty()) {
    w.section(kOptSpec, ck.optimizer_spec);
    for (const auto& [name, t] : ck.optimizer_state) w.tensor(kOptTensor, name, t);
  }
  std::string train;
  detail::put_i64(train, ck.epoch);
  detail::put_i64(train, ck.step);
  detail::put_u64(train, ck.generator.seed);
  detail::put_u64(train, ck.generator.offset);
  w.section(kTrain, train);
  std::string meta;
  detail::put_u32(meta, static_cast<std::uint32_t>(ck.metadata.size()));
  for (const auto& [k, v] : ck.metadata) {
    detail::put_string(meta, k);
    detail::put_string(meta, v);
  }
  w.section(kMeta, meta);
  w.section(kEnd, "");
  file.commit();
}

Checkpoint load_checkpoint(const std::string& path) { return Reader(path).read(); }

std::shared_ptr<nn::Module> build_model(const Checkpoint& ck, const nn::BuildOptions& options) {
  CK_CHECK(!ck.model_spec.empty(), "build_model: the checkpoint has no model spec (the model was of a type ",
           "without Module::spec()); build the model in code and call load_state_dict(checkpoint.model_state)");
  const Generator saved = default_generator();
  std::shared_ptr<nn::Module> model;
  try {
    model = nn::build_module(ck.model_spec, options);
  } catch (...) {
    default_generator() = saved;
    throw;
  }
  default_generator() = saved;
  model->load_state_dict(ck.model_state);
  return model;
}

std::unique_ptr<optim::Optimizer> build_optimizer(const Checkpoint& ck, nn::Module& model) {
  CK_CHECK(!ck.optimizer_spec.empty(), "build_optimizer: the checkpoint holds no optimizer");
  auto optimizer = optim::build_optimizer(ck.optimizer_spec, model.parameters());
  optimizer->load_state_dict(ck.optimizer_state);
  return optimizer;
}

void restore_generator(const Checkpoint& ck) { default_generator() = ck.generator; }

}  // namespace convkit::io
