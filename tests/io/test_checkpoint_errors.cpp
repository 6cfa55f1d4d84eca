// Damaged checkpoints: each kind of damage gives a convkit::Error naming the
// file, the byte offset and what is wrong; and no damage goes unnoticed.
#include <unistd.h>
#include <zlib.h>

#include "data/memory_limit.h"
#include "io/io_testing.h"

namespace convkit {
namespace {

using io_testing::ScratchDir;
using io_testing::throws_with;

// A small but complete checkpoint: model, optimizer with state, preprocessing, metadata.
std::vector<unsigned char> small_checkpoint(const ScratchDir& dir) {
  manual_seed(3);
  auto net = nn::build_module("Sequential(Linear(3, 2), BatchNorm1d(2))");
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  opt.zero_grad();
  (*net)(ones({4, 3})).sum().backward();
  opt.step();
  io::Checkpoint ck = io::make_checkpoint(*net, &opt);
  ck.preprocessing = data::Preprocessing::identity().rescale(0.5);
  ck.set_metadata("k", "v");
  io::save_checkpoint(dir.file("good.ckpt"), ck);
  return io_testing::read_bytes(dir.file("good.ckpt"));
}

// Writes `bytes` to a file and expects loading it to fail with the fragments
// and the file's name.
::testing::AssertionResult fails_with(const ScratchDir& dir, const std::vector<unsigned char>& bytes,
                                      std::vector<std::string> fragments) {
  const std::string path = dir.file("bad.ckpt");
  io_testing::write_bytes(path, bytes);
  fragments.push_back(path);
  fragments.push_back("load_checkpoint");
  return throws_with([&] { io::load_checkpoint(path); }, fragments);
}

TEST(CheckpointErrors, GoodFileLoads) {
  ScratchDir dir;
  small_checkpoint(dir);
  EXPECT_NO_THROW(io::load_checkpoint(dir.file("good.ckpt")));
}

TEST(CheckpointErrors, MissingFile) {
  ScratchDir dir;
  EXPECT_TRUE(throws_with([&] { io::load_checkpoint(dir.file("nope.ckpt")); }, {"nope.ckpt", "cannot open"}));
}

TEST(CheckpointErrors, BadMagic) {
  ScratchDir dir;
  auto bytes = small_checkpoint(dir);
  bytes[1] = 'X';
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset 0", "bad magic", "not a convkit checkpoint"}));
  const std::string text = "{\"not\": \"a checkpoint\"}";
  EXPECT_TRUE(fails_with(dir, std::vector<unsigned char>(text.begin(), text.end()), {"at offset 0", "bad magic"}));
  EXPECT_TRUE(fails_with(dir, {0x89, 'C'}, {"at offset 0", "shorter than the 8-byte magic"}));
}

TEST(CheckpointErrors, UnsupportedVersion) {
  ScratchDir dir;
  auto bytes = small_checkpoint(dir);
  bytes[8] = 2;
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset 8", "unsupported checkpoint format version 2", "reads versions 1 to 1"}));
  bytes[8] = 0;
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset 8", "format version 0, which no convkit writes", "damaged"}));
}

TEST(CheckpointErrors, CrcMismatchNamesTheTensor) {
  ScratchDir dir;
  auto bytes = small_checkpoint(dir);
  // The section of "0.weight" [2, 3]: tag, u64 length, u32 name length, name,
  // dtype, rank, two dims, then the data.
  const std::size_t name_at = io_testing::find(bytes, "0.weight");
  ASSERT_NE(name_at, std::string::npos);
  const std::size_t section_at = name_at - 4 - 8 - 4;
  ASSERT_EQ(std::string(bytes.begin() + static_cast<std::ptrdiff_t>(section_at),
                        bytes.begin() + static_cast<std::ptrdiff_t>(section_at) + 4),
            "TNSR");
  const std::size_t data_at = name_at + 8 + 1 + 1 + 16;
  bytes[data_at + 5] ^= 0x10;
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset " + std::to_string(section_at), "CRC mismatch in model tensor '0.weight'"}));
}

TEST(CheckpointErrors, CrcMismatchInOtherSections) {
  ScratchDir dir;
  auto bytes = small_checkpoint(dir);
  const std::size_t spec_at = io_testing::find(bytes, "Sequential(");
  bytes[spec_at + 3] ^= 0x01;
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset 12", "CRC mismatch in the model spec section"}));
  auto opt = small_checkpoint(dir);
  const std::size_t buffer_at = io_testing::find(opt, "state.0.momentum_buffer");
  opt[buffer_at + 23 + 18 + 5] ^= 0x40;  // name, dtype, rank, 2 dims, then 5 bytes into the data
  EXPECT_TRUE(fails_with(dir, opt, {"CRC mismatch in optimizer tensor 'state.0.momentum_buffer'"}));
}

TEST(CheckpointErrors, TruncatedInsideATensor) {
  ScratchDir dir;
  auto bytes = small_checkpoint(dir);
  const std::size_t name_at = io_testing::find(bytes, "0.weight");
  const std::size_t section_at = name_at - 16;
  bytes.resize(name_at + 20);
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset " + std::to_string(section_at), "truncated", "section 'TNSR'",
                                      "file size " + std::to_string(bytes.size())}));
}

TEST(CheckpointErrors, TruncatedBeforeTheEnd) {
  ScratchDir dir;
  auto bytes = small_checkpoint(dir);
  bytes.resize(bytes.size() - 16);  // drops the END section
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset " + std::to_string(bytes.size()), "truncated", "END"}));
}

TEST(CheckpointErrors, EveryTruncationIsAnError) {
  ScratchDir dir;
  const auto bytes = small_checkpoint(dir);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<unsigned char> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    ASSERT_TRUE(fails_with(dir, cut, {"at offset"})) << "cut at " << n;
  }
}

TEST(CheckpointErrors, EverySingleByteCorruptionIsDetected) {
  ScratchDir dir;
  const auto bytes = small_checkpoint(dir);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto bad = bytes;
    bad[i] ^= 0x5A;
    ASSERT_TRUE(fails_with(dir, bad, {"at offset"})) << "byte " << i << " of " << bytes.size();
  }
}

TEST(CheckpointErrors, TrailingBytesAndUnknownSections) {
  ScratchDir dir;
  auto bytes = small_checkpoint(dir);
  const std::size_t size = bytes.size();
  bytes.push_back(0);
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset " + std::to_string(size), "1 unexpected bytes after the END section"}));

  bytes = small_checkpoint(dir);
  const std::size_t meta_at = io_testing::find(bytes, "META");
  bytes[meta_at] = 'Z';
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset " + std::to_string(meta_at), "unknown section tag 'ZETA'"}));
}

TEST(CheckpointErrors, ImplausibleLengthIsTruncation) {
  ScratchDir dir;
  auto bytes = small_checkpoint(dir);
  bytes[12 + 4 + 7] = 0x7F;  // the SPEC section now claims ~2^63 bytes
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset 12", "truncated: section 'SPEC' declares"}));
}

// ------------------------------------------------- crafted files (issue 22)

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_string(std::string& out, const std::string& text) {
  put_u32(out, static_cast<std::uint32_t>(text.size()));
  out += text;
}

// Checkpoint bytes built section by section, with correct CRCs, so that the
// reader's checks past the framing are what a test reaches.
class CraftedCheckpoint {
 public:
  CraftedCheckpoint() {
    bytes_ = std::string("\x89" "CKPT\r\n\x1a", 8);
    put_u32(bytes_, 1);
  }
  CraftedCheckpoint& section(const char* tag, const std::string& payload) {
    bytes_.append(tag, 4);
    put_u64(bytes_, payload.size());
    bytes_ += payload;
    put_u32(bytes_, static_cast<std::uint32_t>(
                        crc32(0, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()))));
    return *this;
  }
  // A float32 model tensor with no data (every shape here has a 0 in it).
  CraftedCheckpoint& empty_tensor(const std::string& name, const std::vector<std::uint64_t>& dims) {
    std::string p;
    put_string(p, name);
    p.push_back(1);  // float32
    p.push_back(static_cast<char>(dims.size()));
    for (auto d : dims) put_u64(p, d);
    return section("TNSR", p);
  }
  CraftedCheckpoint& spec(const std::string& text) { return section("SPEC", text); }
  // The training state and the END section, then the bytes.
  std::vector<unsigned char> finish() {
    section("TRST", std::string(32, '\0'));
    section("END ", "");
    return std::vector<unsigned char>(bytes_.begin(), bytes_.end());
  }

 private:
  std::string bytes_;
};

TEST(CheckpointErrors, CraftedFileLoads) {
  ScratchDir dir;
  const std::string path = dir.file("crafted.ckpt");
  io_testing::write_bytes(path, CraftedCheckpoint().spec("Linear(2, 3)").empty_tensor("t", {0, 5}).finish());
  const io::Checkpoint ck = io::load_checkpoint(path);
  EXPECT_EQ(ck.model_spec, "Linear(2, 3)");
  ASSERT_EQ(ck.model_state.size(), 1u);
  EXPECT_EQ(ck.model_state[0].second.shape(), (Shape{0, 5}));
}

// What `convkit predict` does with a checkpoint: load it, then build the
// model from its spec. A 4-byte buffer for 2^62 + 1 elements crashed here.
TEST(CheckpointErrors, HostileModelSpecsAreErrorsNotCrashes) {
  ScratchDir dir;
  const std::string path = dir.file("spec.ckpt");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"BatchNorm1d(4611686018427387905)", "[4, 4611686018427387905]"},
      {"Linear(2147483648, 2147483648, bias=false)", "budget"},
      {"Conv2d(1, 3, 10000000003)", "[3, 1, 10000000003, 10000000003]"},
      {"BatchNorm2d(222222222)", "budget"},
      {"Linear(100000, 100000)", "budget"},
  };
  for (const auto& [spec, fragment] : cases) {
    io_testing::write_bytes(path, CraftedCheckpoint().spec(spec).finish());
    const io::Checkpoint ck = io::load_checkpoint(path);
    EXPECT_TRUE(throws_with([&] { io::build_model(ck); }, {"model spec: at offset 0", fragment})) << spec;
  }
  io_testing::write_bytes(path, CraftedCheckpoint().spec("Linear(100, 100)").finish());
  EXPECT_TRUE(throws_with([&] { io::build_model(io::load_checkpoint(path), nn::BuildOptions().max_bytes(1000)); },
                          {"weight [100, 100]", "budget of 1000 bytes"}));
}

TEST(CheckpointErrors, HugeResizeInThePreprocessingIsRefused) {
  ScratchDir dir;
  auto bytes = CraftedCheckpoint()
                   .spec("ReLU()")
                   .section("PREP", "convkit-preprocessing 1\nresize=4294967296x4294967296\n")
                   .finish();
  EXPECT_TRUE(fails_with(dir, bytes, {"bad preprocessing", "4294967296x4294967296", "kMaxResizePixels"}));
}

// No data, yet strides of 2^112: the old check multiplied the 0 in first.
TEST(CheckpointErrors, EmptyTensorsWithHugeDimensionsAreRefused) {
  ScratchDir dir;
  const std::uint64_t big = std::uint64_t{1} << 56;
  EXPECT_TRUE(fails_with(dir, CraftedCheckpoint().spec("ReLU()").empty_tensor("z", {0, big, big}).finish(),
                         {"bad dimension 72057594037927936 in the shape of model tensor 'z'"}));
  EXPECT_TRUE(fails_with(dir, CraftedCheckpoint().spec("ReLU()").empty_tensor("z", {big, 2, 0}).finish(),
                         {"bad dimension 2 in the shape of model tensor 'z'"}));
}

// save_checkpoint refuses repeated metadata keys; so must the reader.
TEST(CheckpointErrors, RepeatedMetadataKeysAreRefused) {
  ScratchDir dir;
  std::string meta;
  put_u32(meta, 3);
  for (const char* key : {"a", "b", "a"}) {
    put_string(meta, key);
    put_string(meta, "v");
  }
  const auto bytes = CraftedCheckpoint().spec("ReLU()").section("META", meta).finish();
  // 8 + 4 + SPEC (4 + 8 + 6 + 4) + META header (12) + count (4) + two pairs (2 x 10).
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset 70", "metadata key 'a' appears twice"}));
}

// A repeated name found among many: the check is a hash set, not a scan of
// every earlier tensor per tensor (100k names took minutes that way).
TEST(CheckpointErrors, RepeatedTensorNameAmongManyIsFound) {
  ScratchDir dir;
  CraftedCheckpoint ck;
  ck.spec("ReLU()");
  constexpr int kCount = 100000;
  for (int i = 0; i < kCount; ++i) ck.empty_tensor(std::string("t").append(std::to_string(i)), {0});
  const std::string path = dir.file("many.ckpt");
  io_testing::write_bytes(path, CraftedCheckpoint(ck).finish());
  EXPECT_EQ(io::load_checkpoint(path).model_state.size(), static_cast<std::size_t>(kCount));
  ck.empty_tensor("t77777", {0});
  EXPECT_TRUE(fails_with(dir, ck.finish(), {"tensor 't77777' appears twice"}));
}

// Out of memory while reading is an Error naming what was being allocated,
// not std::bad_alloc escaping to std::terminate. The child process limits
// its address space and reads a (sparse) file whose SPEC section claims 3 GiB.
TEST(CheckpointErrorsDeathTest, OutOfMemoryIsAnError) {
  if (!testing::kAddressSpaceLimitWorks) GTEST_SKIP() << "sanitizers need more address space than the limit leaves";
  ScratchDir dir;
  const std::string path = dir.file("huge.ckpt");
  const std::uint64_t claimed = std::uint64_t{3} << 30;
  std::string head("\x89" "CKPT\r\n\x1a", 8);
  put_u32(head, 1);
  head += "SPEC";
  put_u64(head, claimed);
  io_testing::write_bytes(path, std::vector<unsigned char>(head.begin(), head.end()));
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(head.size() + claimed + 4)), 0);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(testing::exit_after_body_under_memory_limit(
                  std::uint64_t{1} << 30, [&] { io::load_checkpoint(path); },
                  "at offset 24: out of memory allocating 3221225472 bytes for the model spec section"),
              ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace convkit
