#pragma once
// A small JSON reader and string quoting, enough for safetensors headers:
// objects (key order kept, duplicate keys rejected), arrays, strings (all
// escapes, \u surrogate pairs to UTF-8), numbers (kept as their text, so
// integers up to 2^64 - 1 read exactly), true, false, null. Errors give the
// byte offset in the text.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace convkit::io::json {

struct Member;

struct Value {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  std::size_t position = 0;  // byte offset where the value starts
  bool boolean = false;
  std::string text;  // the string's value, or the number as written
  std::vector<Value> items;                            // array
  std::vector<Member> members;  // object, in order

  // The member named key, or null.
  const Value* find(const std::string& key) const;
  // A number that is a non-negative integer within uint64; false otherwise.
  bool to_uint64(std::uint64_t& out) const;
};

// An object's member. Its own struct, not a std::pair: a pair of the
// incomplete Value inside Value does not compile with clang and libstdc++.
struct Member {
  std::string key;
  Value value;
};

const char* kind_name(Value::Kind kind);  // "an object", "a string", ...

// Parses one JSON value filling the whole text (whitespace around is fine).
// Throws convkit::Error "<what>: at offset N: ..." on malformed input.
// Offsets (in errors and Value::position) count from base_offset, so that
// JSON embedded in a file reports file offsets.
Value parse(std::string_view text, const std::string& what, std::size_t base_offset = 0);

// The JSON string literal for s (quotes included), escaping '"', '\\' and
// control characters; other bytes pass through as they are (UTF-8).
std::string quote(const std::string& s);

}  // namespace convkit::io::json
