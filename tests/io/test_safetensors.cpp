// safetensors: round trips, the exact bytes of a small file written by hand
// from the format's description, reading hand-written files, and validation.
#include "io/io_testing.h"

namespace convkit {
namespace {

using io_testing::ScratchDir;
using io_testing::same_bits;
using io_testing::throws_with;

std::vector<std::uint8_t> file_bytes(const std::string& header, const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

TEST(Safetensors, WritesTheExactBytes) {
  const StateDict tensors = {
      {"a", from_vector(std::vector<float>{1.0f, -2.0f}, {2})},
      {"b", from_vector(std::vector<std::int64_t>{7}, {}, DType::int64)},
  };
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}})";
  ASSERT_EQ(json.size(), 138u);
  const std::string header = json + std::string(6, ' ');  // padded to 144, a multiple of 8
  const std::vector<std::uint8_t> data = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0,  // 1.0f, -2.0f
                                          0x07, 0, 0, 0, 0, 0, 0, 0};                     // int64 7
  const auto got = io::safetensors_bytes(tensors, {{"format", "pt"}});
  const auto want = file_bytes(header, data);
  // As strings, so a failure shows the header text.
  EXPECT_EQ(std::string(got.begin(), got.end()), std::string(want.begin(), want.end()));
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  // Whitespace, tensors listed out of data order, an escaped name, a float64
  // matrix, metadata; data in the order b, a.
  const std::string header =
      "{ \"w\\u00e9ight\" : {\"shape\": [2, 2], \"dtype\": \"F64\", \"data_offsets\": [4, 36]},\n"
      "  \"__metadata__\": {\"format\": \"pt\", \"note\": \"a\\\"b\"},\n"
      "  \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]} }";
  std::vector<std::uint8_t> data = {0x00, 0x00, 0x40, 0x40};  // 3.0f
  for (double v : {0.5, -1.0, 2.0, 1e-300}) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, 8);
    for (int i = 0; i < 8; ++i) data.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
  }
  const io::SafetensorsFile f = io::parse_safetensors(file_bytes(header, data), "hand.safetensors");
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].first, "b");
  EXPECT_EQ(f.tensors[0].second.to_vector<float>(), std::vector<float>{3.0f});
  EXPECT_EQ(f.tensors[1].first, "w\xc3\xa9ight");
  EXPECT_EQ(f.tensors[1].second.shape(), Shape({2, 2}));
  EXPECT_EQ(f.tensors[1].second.dtype(), DType::float64);
  EXPECT_EQ(f.tensors[1].second.to_vector<double>(), (std::vector<double>{0.5, -1.0, 2.0, 1e-300}));
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"note", "a\"b"}}));
}

TEST(Safetensors, RoundTripsThroughAFile) {
  ScratchDir dir;
  std::mt19937_64 rng(testing::kSeed);
  const Tensor m = testing::random_tensor({3, 4}, rng);
  const StateDict tensors = {
      {"conv.weight", testing::random_tensor({4, 3, 3, 3}, rng)},
      {"f64", testing::random_tensor({5}, rng, DType::float64)},
      {"count", from_vector(std::vector<std::int64_t>{-3, 1LL << 40}, {2}, DType::int64)},
      {"scalar", scalar_tensor(2.5)},
      {"empty", zeros({0, 4})},
      {"transposed", m.t()},
      {"name with \"quotes\" and \\", ones({1})},
  };
  io::save_safetensors(dir.file("t.safetensors"), tensors, {{"k", "v\n"}});
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"t.safetensors"});
  const auto f = io::load_safetensors(dir.file("t.safetensors"));
  EXPECT_TRUE(same_bits(f.tensors, tensors));
  EXPECT_EQ(f.tensors[2].second.dtype(), DType::int64);
  EXPECT_EQ(f.tensors[2].second.to_vector<std::int64_t>(), (std::vector<std::int64_t>{-3, 1LL << 40}));
  EXPECT_EQ(f.metadata.at("k"), "v\n");
  // The data starts 8-byte aligned.
  const auto bytes = io_testing::read_bytes(dir.file("t.safetensors"));
  EXPECT_EQ((8 + bytes[0] + 256 * bytes[1]) % 8, 0);
}

TEST(Safetensors, ModelStateLoadsIntoAFreshModel) {
  ScratchDir dir;
  auto net = models::create("fmnist-cnn-bn");
  io::save_safetensors(dir.file("m.safetensors"), net->state_dict());
  auto other = models::create("fmnist-cnn-bn");
  other->load_state_dict(io::load_safetensors(dir.file("m.safetensors")).tensors);
  EXPECT_TRUE(same_bits(other->state_dict(), net->state_dict()));
}

TEST(Safetensors, WriterRejectsBadNames) {
  EXPECT_TRUE(throws_with([] { io::safetensors_bytes({{"__metadata__", ones({1})}}); }, {"reserved"}));
  EXPECT_TRUE(throws_with([] { io::safetensors_bytes({{"", ones({1})}}); }, {"empty name"}));
  EXPECT_TRUE(throws_with([] { io::safetensors_bytes({{"a", ones({1})}, {"a", ones({1})}}); }, {"'a' appears twice"}));
}

::testing::AssertionResult rejects(const std::string& header, const std::vector<std::uint8_t>& data,
                                   const std::vector<std::string>& fragments) {
  std::vector<std::string> all = fragments;
  all.push_back("bad.safetensors");
  return throws_with([&] { io::parse_safetensors(file_bytes(header, data), "bad.safetensors"); }, all);
}

TEST(Safetensors, ValidationErrors) {
  const std::vector<std::uint8_t> eight(8, 0);
  EXPECT_TRUE(throws_with([] { io::parse_safetensors({1, 2, 3}, "x.st"); }, {"x.st", "shorter than the 8-byte"}));
  auto huge = file_bytes("{}", {});
  huge[4] = 1;  // header length 2^32 + 2
  EXPECT_TRUE(throws_with([&] { io::parse_safetensors(huge, "x.st"); }, {"at offset 0", "exceeds"}));
  auto past = file_bytes("{}", {});
  past[0] = 50;
  EXPECT_TRUE(throws_with([&] { io::parse_safetensors(past, "x.st"); }, {"at offset 0", "runs past the end"}));
  EXPECT_TRUE(rejects("[]", {}, {"at offset 8", "JSON object"}));
  EXPECT_TRUE(rejects("{\"a\": {\"dtype\": \"F32\",}}", {}, {"at offset 30", "expected a string key"}));
  EXPECT_TRUE(rejects(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", {0, 0},
                      {"at offset 22", "tensor 'a' has dtype F16", "F32, F64, I64"}));
  EXPECT_TRUE(rejects(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", {0, 0, 0, 0},
                      {"tensor 'a' has a bad dimension"}));
  EXPECT_TRUE(rejects(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight,
                      {"tensor 'a' spans 8 bytes, but shape [3] F32 needs 12"}));
  EXPECT_TRUE(rejects(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight,
                      {"end before they begin"}));
  EXPECT_TRUE(rejects(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight,
                      {"past the end of the 8-byte data buffer"}));
  EXPECT_TRUE(rejects(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight,
                      {"a gap of 4 bytes", "before tensor 'a'"}));
  EXPECT_TRUE(rejects(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                      eight, {"tensor 'b'", "overlaps tensor 'a'"}));
  EXPECT_TRUE(rejects(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight,
                      {"holds 8 bytes but the tensors cover 4"}));
  EXPECT_TRUE(rejects(R"({"a":{"dtype":"F32","shape":[1]}})", {0, 0, 0, 0}, {"tensor 'a' needs \"data_offsets\""}));
  EXPECT_TRUE(rejects(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", {0, 0, 0, 0}, {"tensor 'a' needs a string \"dtype\""}));
  EXPECT_TRUE(rejects(R"({"a":5})", {}, {"tensor 'a' must be an object"}));
  EXPECT_TRUE(rejects(R"({"__metadata__":{"n":1}})", {}, {"__metadata__ value of \"n\" must be a string"}));
  EXPECT_TRUE(rejects(R"({"a":{},"a":{}})", {}, {"duplicate key \"a\""}));
}

// Issue 22: what the writer refuses, the reader refuses too.
TEST(Safetensors, ReaderRejectsAnEmptyNameAsTheWriterDoes) {
  EXPECT_TRUE(rejects(R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", {0, 0, 0, 0},
                      {"at offset 12", "a tensor has an empty name"}));
}

// No data, yet strides of 2^112: the old check multiplied the 0 in first.
TEST(Safetensors, EmptyTensorsWithHugeDimensionsAreRefused) {
  EXPECT_TRUE(rejects(R"({"z":{"dtype":"F32","shape":[0,72057594037927936,72057594037927936],"data_offsets":[0,0]}})",
                      {}, {"tensor 'z' has too many elements"}));
  EXPECT_TRUE(rejects(R"({"z":{"dtype":"F32","shape":[72057594037927936,2,0],"data_offsets":[0,0]}})", {},
                      {"tensor 'z' has too many elements"}));
  const auto file = io::parse_safetensors(
      file_bytes(R"({"z":{"dtype":"F32","shape":[0,65536,65536],"data_offsets":[0,0]}})", {}), "ok.st");
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_EQ(file.tensors[0].second.shape(), (Shape{0, 65536, 65536}));
}

TEST(Safetensors, LoadErrorsNameTheFile) {
  ScratchDir dir;
  EXPECT_TRUE(throws_with([&] { io::load_safetensors(dir.file("none.safetensors")); }, {"none.safetensors", "cannot open"}));
  io::save_safetensors(dir.file("t.safetensors"), {{"a", ones({4})}});
  auto bytes = io_testing::read_bytes(dir.file("t.safetensors"));
  ASSERT_FALSE(bytes.empty());
  bytes.pop_back();  // resize(size() - 1) trips GCC 12's -Wstringop-overflow at -O1 under ASan
  io_testing::write_bytes(dir.file("t.safetensors"), bytes);
  EXPECT_TRUE(throws_with([&] { io::load_safetensors(dir.file("t.safetensors")); },
                          {"t.safetensors", "tensor 'a' ends at data offset 16, past the end of the 15-byte"}));
}

}  // namespace
}  // namespace convkit
