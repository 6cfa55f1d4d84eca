// Damaged checkpoints: each kind of damage gives a convkit::Error naming the
// file, the byte offset and what is wrong; and no damage goes unnoticed.
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
  EXPECT_TRUE(fails_with(dir, bytes, {"at offset 8", "unsupported checkpoint format version 0"}));
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

}  // namespace
}  // namespace convkit
