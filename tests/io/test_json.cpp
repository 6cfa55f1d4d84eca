// The JSON reader behind safetensors headers (src/io/json.h).
#include "io/io_testing.h"
#include "io/json.h"

namespace convkit {
namespace {

using io::json::Value;
using io_testing::throws_with;

TEST(Json, ReadsEveryKind) {
  const Value v = io::json::parse(R"( {"n": null, "t": true, "f": false, "i": 18446744073709551615,
      "r": -1.5e-3, "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "a": [1, [], {}]} )",
                                  "test");
  ASSERT_EQ(v.kind, Value::Kind::object);
  ASSERT_EQ(v.members.size(), 7u);
  EXPECT_EQ(v.members[0].key, "n");  // order kept
  EXPECT_EQ(v.find("n")->kind, Value::Kind::null);
  EXPECT_TRUE(v.find("t")->boolean);
  EXPECT_FALSE(v.find("f")->boolean);
  std::uint64_t big = 0;
  EXPECT_TRUE(v.find("i")->to_uint64(big));
  EXPECT_EQ(big, 18446744073709551615ULL);
  EXPECT_EQ(v.find("r")->text, "-1.5e-3");
  EXPECT_FALSE(v.find("r")->to_uint64(big));
  EXPECT_EQ(v.find("s")->text, "x\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v.find("a")->items.size(), 3u);
  EXPECT_EQ(v.find("a")->position, 132u);
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(Json, QuoteRoundTrips) {
  const std::string s = std::string("a\"b\\c\n\x01\x1f") + "\xc3\xa9";
  EXPECT_EQ(io::json::quote(s), "\"a\\\"b\\\\c\\n\\u0001\\u001f\xc3\xa9\"");
  EXPECT_EQ(io::json::parse(io::json::quote(s), "test").text, s);
}

TEST(Json, ErrorsGiveTheOffset) {
  EXPECT_TRUE(throws_with([] { io::json::parse("", "hdr"); }, {"hdr: at offset 0", "expected a value"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("[1 2]", "hdr"); }, {"at offset 3", "expected ',' or ']'"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("{\"a\" 1}", "hdr"); }, {"at offset 5", "':'"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("\"abc", "hdr"); }, {"unterminated string"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("\"a\nb\"", "hdr"); }, {"at offset 2", "control character"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("\"\\x\"", "hdr"); }, {"at offset 2", "unknown escape"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("\"\\ud800\"", "hdr"); }, {"low surrogate"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("\"\\udc00\"", "hdr"); }, {"unpaired low surrogate"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("01", "hdr"); }, {"at offset 1", "unexpected text"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("1.", "hdr"); }, {"digits must follow '.'"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("-", "hdr"); }, {"malformed number"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("tru", "hdr"); }, {"expected a value"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("{\"a\":1,\"a\":2}", "hdr"); }, {"at offset 7", "duplicate key"}));
  EXPECT_TRUE(throws_with([] { io::json::parse(std::string(100, '['), "hdr"); }, {"nested more than 64"}));
  EXPECT_TRUE(throws_with([] { io::json::parse("[x]", "hdr", 8); }, {"at offset 9"}));
}

// Issue 22: the duplicate check was a scan of every earlier key, 49 s for
// 200k keys; it is a hash set now. A quadratic check would make this test
// run for minutes.
TEST(Json, ManyKeysAreReadAndALateDuplicateIsFound) {
  constexpr int kKeys = 200000;
  std::string text = "{";
  for (int i = 0; i < kKeys; ++i) text += "\"key" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  const std::size_t duplicate_at = text.size();
  const Value v = io::json::parse(text + "\"last\":0}", "big");
  ASSERT_EQ(v.members.size(), static_cast<std::size_t>(kKeys) + 1);
  EXPECT_EQ(v.members[123456].key, "key123456");
  EXPECT_TRUE(throws_with([&] { io::json::parse(text + "\"key199999\":0}", "big"); },
                          {"at offset " + std::to_string(duplicate_at), "duplicate key \"key199999\""}));
}

}  // namespace
}  // namespace convkit
