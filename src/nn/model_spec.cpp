// The spec language of convkit/nn/model_spec.h: values, the parser, the
// argument reader builders use, the writer spec() overrides use, and the
// registry that maps type names to builders.
#include "convkit/nn/model_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>

#include "convkit/core/error.h"
#include "convkit/nn/module.h"
#include "nn/builtin_module_types.h"

namespace convkit::nn {

namespace {

const char* kind_name(SpecValue::Kind kind) {
  switch (kind) {
    case SpecValue::Kind::integer: return "an integer";
    case SpecValue::Kind::real: return "a real number";
    case SpecValue::Kind::boolean: return "true or false";
    case SpecValue::Kind::word: return "a word";
    case SpecValue::Kind::list: return "a list";
    case SpecValue::Kind::module: return "a module";
  }
  return "?";
}

std::string at(std::size_t position) {
  return "model spec: at offset " + std::to_string(position) + ": ";
}

}  // namespace

// ---------------------------------------------------------------- SpecValue

SpecValue SpecValue::integer(std::int64_t v, std::size_t position) {
  SpecValue s;
  s.kind_ = Kind::integer;
  s.int_ = v;
  s.position_ = position;
  return s;
}

SpecValue SpecValue::real(double v, std::size_t position) {
  SpecValue s;
  s.kind_ = Kind::real;
  s.real_ = v;
  s.position_ = position;
  return s;
}

SpecValue SpecValue::boolean(bool v, std::size_t position) {
  SpecValue s;
  s.kind_ = Kind::boolean;
  s.bool_ = v;
  s.position_ = position;
  return s;
}

SpecValue SpecValue::word(std::string v, std::size_t position) {
  SpecValue s;
  s.kind_ = Kind::word;
  s.word_ = std::move(v);
  s.position_ = position;
  return s;
}

SpecValue SpecValue::list(std::vector<SpecValue> items, std::size_t position) {
  SpecValue s;
  s.kind_ = Kind::list;
  s.items_ = std::move(items);
  s.position_ = position;
  return s;
}

SpecValue SpecValue::module(SpecNode node, std::size_t position) {
  SpecValue s;
  s.kind_ = Kind::module;
  s.module_ = std::make_shared<const SpecNode>(std::move(node));
  s.position_ = position;
  return s;
}

namespace {
[[noreturn]] void wrong_kind(const SpecValue& v, const std::string& what, const char* expected) {
  CK_FAIL(at(v.position()), what, " must be ", expected, ", got ", kind_name(v.kind()), " (", v.str(),
          ")");
}
}  // namespace

std::int64_t SpecValue::as_int(const std::string& what) const {
  if (kind_ != Kind::integer) wrong_kind(*this, what, "an integer");
  return int_;
}

double SpecValue::as_real(const std::string& what) const {
  if (kind_ == Kind::integer) return static_cast<double>(int_);
  if (kind_ != Kind::real) wrong_kind(*this, what, "a number");
  return real_;
}

bool SpecValue::as_bool(const std::string& what) const {
  if (kind_ != Kind::boolean) wrong_kind(*this, what, "true or false");
  return bool_;
}

const std::string& SpecValue::as_word(const std::string& what) const {
  if (kind_ != Kind::word) wrong_kind(*this, what, "a word");
  return word_;
}

const std::vector<SpecValue>& SpecValue::as_list(const std::string& what) const {
  if (kind_ != Kind::list) wrong_kind(*this, what, "a list");
  return items_;
}

const SpecNode& SpecValue::as_module(const std::string& what) const {
  if (kind_ != Kind::module) wrong_kind(*this, what, "a module");
  return *module_;
}

std::vector<std::int64_t> SpecValue::as_ints(const std::string& what, std::size_t n) const {
  if (kind_ == Kind::integer) return std::vector<std::int64_t>(n, int_);
  if (kind_ != Kind::list) wrong_kind(*this, what, "an integer or a list of integers");
  CK_CHECK(items_.size() == n, at(position_), what, " must list ", n, " integers, got ", items_.size(),
           " (", str(), ")");
  std::vector<std::int64_t> out;
  for (const auto& item : items_) out.push_back(item.as_int(what));
  return out;
}

std::string format_spec_real(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, v);
  std::string text(buf, result.ptr);
  // Keep it a real when read back: "1" would parse as an integer.
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string SpecValue::str() const {
  switch (kind_) {
    case Kind::integer: return std::to_string(int_);
    case Kind::real: return format_spec_real(real_);
    case Kind::boolean: return bool_ ? "true" : "false";
    case Kind::word: return word_;
    case Kind::list: {
      std::string out = "[";
      for (std::size_t i = 0; i < items_.size(); ++i) out += (i ? ", " : "") + items_[i].str();
      return out + "]";
    }
    case Kind::module: return module_->str();
  }
  return {};
}

std::string SpecNode::str() const {
  std::string out = type + "(";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i) out += ", ";
    if (!args[i].key.empty()) out += args[i].key + "=";
    out += args[i].value.str();
  }
  return out + ")";
}

// ---------------------------------------------------------------- parser

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  SpecNode parse_top() {
    skip_space();
    SpecNode node = parse_module(0);
    skip_space();
    if (pos_ != text_.size()) fail("expected the end of the spec after the module", true);
    return node;
  }

 private:
  static constexpr int kMaxDepth = 200;

  [[noreturn]] void fail(const std::string& what, bool show_found = true) const {
    std::string found;
    if (show_found) {
      found = pos_ < text_.size() ? ", found '" + std::string(1, text_[pos_]) + "'" : ", found the end";
    }
    CK_FAIL(at(pos_), what, found);
  }

  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }

  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  void expect(char c, const char* context) {
    if (!peek(c)) fail(std::string("expected '") + c + "' " + context);
    ++pos_;
  }

  std::string identifier() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  SpecNode parse_module(int depth) {
    if (depth > kMaxDepth) fail("modules nested more than " + std::to_string(kMaxDepth) + " deep", false);
    skip_space();
    SpecNode node;
    node.position = pos_;
    if (pos_ >= text_.size() || !is_ident_start(text_[pos_])) fail("expected a module type");
    node.type = identifier();
    expect('(', "after module type '" + node.type + "'");
    if (peek(')')) {
      ++pos_;
      return node;
    }
    for (;;) {
      node.args.push_back(parse_arg(node, depth));
      if (peek(')')) {
        ++pos_;
        return node;
      }
      expect(',', "or ')' after an argument of " + node.type);
    }
  }

  void expect(char c, const std::string& context) { expect(c, context.c_str()); }

  SpecArg parse_arg(const SpecNode& node, int depth) {
    skip_space();
    SpecArg arg;
    // A key is an identifier followed by '='; anything else is a value.
    if (pos_ < text_.size() && is_ident_start(text_[pos_])) {
      const std::size_t start = pos_;
      std::string ident = identifier();
      if (peek('=')) {
        for (const auto& earlier : node.args) {
          if (earlier.key == ident) {
            pos_ = start;
            fail("option '" + ident + "' of " + node.type + " given twice", false);
          }
        }
        ++pos_;
        arg.key = std::move(ident);
      } else {
        pos_ = start;
      }
    }
    arg.value = parse_value(depth);
    return arg;
  }

  SpecValue parse_value(int depth) {
    skip_space();
    const std::size_t start = pos_;
    if (pos_ >= text_.size()) fail("expected a value");
    const char c = text_[pos_];
    if (c == '[') {
      ++pos_;
      std::vector<SpecValue> items;
      if (peek(']')) {
        ++pos_;
        return SpecValue::list(std::move(items), start);
      }
      for (;;) {
        if (depth > kMaxDepth) fail("lists nested too deep", false);
        items.push_back(parse_value(depth + 1));
        if (peek(']')) {
          ++pos_;
          return SpecValue::list(std::move(items), start);
        }
        expect(',', "or ']' in a list");
      }
    }
    if (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9')) return parse_number();
    if (is_ident_start(c)) {
      std::string ident = identifier();
      if (peek('(')) {
        pos_ = start;
        return SpecValue::module(parse_module(depth + 1), start);
      }
      if (ident == "true") return SpecValue::boolean(true, start);
      if (ident == "false") return SpecValue::boolean(false, start);
      if (ident == "inf") return SpecValue::real(INFINITY, start);
      if (ident == "nan") return SpecValue::real(NAN, start);
      return SpecValue::word(std::move(ident), start);
    }
    fail("expected a value (number, word, list or module)");
  }

  SpecValue parse_number() {
    const std::size_t start = pos_;
    bool negative = false;
    if (text_[pos_] == '+' || text_[pos_] == '-') {
      negative = text_[pos_] == '-';
      ++pos_;
    }
    if (text_.substr(pos_, 3) == "inf" && (pos_ + 3 >= text_.size() || !is_ident_char(text_[pos_ + 3]))) {
      pos_ += 3;
      return SpecValue::real(negative ? -INFINITY : INFINITY, start);
    }
    const std::size_t digits = pos_;
    bool is_real = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c >= '0' && c <= '9') {
        ++pos_;
      } else if (c == '.') {
        is_real = true;
        ++pos_;
      } else if ((c == 'e' || c == 'E') && pos_ > digits) {
        is_real = true;
        ++pos_;
        if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      } else {
        break;
      }
    }
    const std::string_view body = text_.substr(digits, pos_ - digits);
    if (body.empty() || (pos_ < text_.size() && is_ident_char(text_[pos_]))) {
      pos_ = start;
      fail("malformed number");
    }
    if (is_real) {
      double v = 0;
      const auto r = std::from_chars(body.data(), body.data() + body.size(), v);
      if (r.ec != std::errc() || r.ptr != body.data() + body.size()) {
        pos_ = start;
        fail("malformed number '" + std::string(text_.substr(start, digits - start)) + std::string(body) + "'",
             false);
      }
      return SpecValue::real(negative ? -v : v, start);
    }
    // Read the magnitude as unsigned so INT64_MIN is representable.
    std::uint64_t magnitude = 0;
    const auto r = std::from_chars(body.data(), body.data() + body.size(), magnitude);
    const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
    if (r.ec != std::errc() || magnitude > limit) {
      pos_ = start;
      fail("integer out of the int64 range", false);
    }
    const auto value = negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
    return SpecValue::integer(value, start);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

SpecNode parse_spec(const std::string& text) { return Parser(text).parse_top(); }

// ---------------------------------------------------------------- SpecArgs

SpecArgs::SpecArgs(const SpecNode& node) : node_(node), taken_(node.args.size(), false) {}

std::string SpecArgs::where(const SpecValue* value) const {
  return at(value ? value->position() : node_.position) + node_.type + ": ";
}

const SpecValue* SpecArgs::take(std::size_t index, const std::string& key) {
  const SpecValue* found = nullptr;
  std::size_t positional = 0;
  for (std::size_t i = 0; i < node_.args.size(); ++i) {
    const SpecArg& arg = node_.args[i];
    bool match = false;
    if (arg.key.empty()) {
      match = positional++ == index;
    } else {
      match = arg.key == key;
    }
    if (!match) continue;
    CK_CHECK(found == nullptr, where(&arg.value), "'", key, "' given both by position and by name");
    CK_CHECK(!taken_[i], where(&arg.value), "argument '", key, "' read twice");
    taken_[i] = true;
    found = &arg.value;
  }
  return found;
}

const SpecValue* SpecArgs::take(const std::string& key) {
  for (std::size_t i = 0; i < node_.args.size(); ++i) {
    if (node_.args[i].key == key) {
      CK_CHECK(!taken_[i], where(&node_.args[i].value), "option '", key, "' read twice");
      taken_[i] = true;
      return &node_.args[i].value;
    }
  }
  return nullptr;
}

const SpecValue& SpecArgs::require(std::size_t index, const std::string& key) {
  const SpecValue* v = take(index, key);
  CK_CHECK(v != nullptr, where(), "missing argument '", key, "' (position ", index, " or ", key, "=...)");
  return *v;
}

std::vector<const SpecArg*> SpecArgs::take_rest() {
  std::vector<const SpecArg*> rest;
  for (std::size_t i = 0; i < node_.args.size(); ++i) {
    if (!taken_[i]) {
      taken_[i] = true;
      rest.push_back(&node_.args[i]);
    }
  }
  return rest;
}

void SpecArgs::finish() const {
  std::size_t positional = 0;
  for (std::size_t i = 0; i < node_.args.size(); ++i) {
    const SpecArg& arg = node_.args[i];
    if (arg.key.empty()) ++positional;
    if (taken_[i]) continue;
    if (arg.key.empty()) {
      CK_FAIL(where(&arg.value), "unexpected positional argument #", positional, " (", arg.value.str(),
              "): too many arguments");
    }
    CK_FAIL(where(&arg.value), "has no option '", arg.key, "'");
  }
}

// ---------------------------------------------------------------- SpecWriter

SpecWriter::SpecWriter(std::string type) : type_(std::move(type)) {}

void SpecWriter::begin_arg() {
  if (!args_.empty()) args_ += ", ";
  if (!pending_key_.empty()) {
    args_ += pending_key_ + "=";
    pending_key_.clear();
  }
}

SpecWriter& SpecWriter::integer(std::int64_t v) {
  begin_arg();
  args_ += std::to_string(v);
  return *this;
}

SpecWriter& SpecWriter::real(double v) {
  begin_arg();
  args_ += format_spec_real(v);
  return *this;
}

SpecWriter& SpecWriter::boolean(bool v) {
  begin_arg();
  args_ += v ? "true" : "false";
  return *this;
}

SpecWriter& SpecWriter::ints(const std::vector<std::int64_t>& v, bool collapse) {
  const bool uniform = !v.empty() && std::all_of(v.begin(), v.end(), [&](auto x) { return x == v[0]; });
  if (collapse && uniform) return integer(v[0]);
  begin_arg();
  args_ += "[";
  for (std::size_t i = 0; i < v.size(); ++i) args_ += (i ? ", " : "") + std::to_string(v[i]);
  args_ += "]";
  return *this;
}

SpecWriter& SpecWriter::reals(const std::vector<double>& v) {
  begin_arg();
  args_ += "[";
  for (std::size_t i = 0; i < v.size(); ++i) args_ += (i ? ", " : "") + format_spec_real(v[i]);
  args_ += "]";
  return *this;
}

SpecWriter& SpecWriter::word(const std::string& v) {
  CK_CHECK(!v.empty() && is_ident_start(v[0]) &&
               std::all_of(v.begin(), v.end(), [](char c) { return is_ident_char(c); }) && v != "true" &&
               v != "false" && v != "inf" && v != "nan",
           "SpecWriter(", type_, "): '", v, "' is not a valid word (an identifier other than true, false, inf, nan)");
  begin_arg();
  args_ += v;
  return *this;
}

SpecWriter& SpecWriter::child(const std::string& spec) {
  begin_arg();
  args_ += spec;
  return *this;
}

SpecWriter& SpecWriter::key(const std::string& key) {
  CK_CHECK(!key.empty() && is_ident_start(key[0]) &&
               std::all_of(key.begin(), key.end(), [](char c) { return is_ident_char(c); }),
           "SpecWriter(", type_, "): '", key, "' is not a valid option name");
  pending_key_ = key;
  return *this;
}

std::string SpecWriter::str() const { return type_ + "(" + args_ + ")"; }

// ---------------------------------------------------------------- registry

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, ModuleBuilder> builders;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    register_builtin_module_types([&](const std::string& type, ModuleBuilder builder) {
      reg->builders[type] = std::move(builder);
    });
    return reg;
  }();
  return *r;
}

}  // namespace

void register_module_type(const std::string& type, ModuleBuilder builder) {
  CK_CHECK(!type.empty() && is_ident_start(type[0]) &&
               std::all_of(type.begin(), type.end(), [](char c) { return is_ident_char(c); }),
           "register_module_type: '", type, "' is not a valid type name (an identifier)");
  CK_CHECK(builder != nullptr, "register_module_type(", type, "): the builder is empty");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.builders[type] = std::move(builder);
}

bool is_registered_module_type(const std::string& type) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.builders.count(type) != 0;
}

std::vector<std::string> registered_module_types() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, builder] : r.builders) names.push_back(name);
  return names;
}

// ---------------------------------------------------------------- budget

namespace {

// The budget of the build_module call in progress on this thread, shared by
// the nested calls containers make for their children.
struct Budget {
  std::uint64_t limit = 0;
  std::uint64_t used = 0;
};
thread_local Budget* active_budget = nullptr;

}  // namespace

void SpecArgs::reserve(const std::string& what, const Shape& shape, DType dtype) {
  for (auto d : shape) {
    if (d < 0) return;
  }
  std::int64_t numel = 0;
  try {
    numel = shape.numel();
  } catch (const Error& e) {
    CK_FAIL(where(), what, ": ", e.what());
  }
  if (active_budget == nullptr) return;  // a builder called outside build_module
  Budget& b = *active_budget;
  const std::uint64_t left = b.limit - b.used, count = static_cast<std::uint64_t>(numel);
  // Compared as counts: numel (up to 2^62) times the size could wrap.
  CK_CHECK(count <= left / dtype_size(dtype), where(), what, " ", shape, " ", dtype, " takes ", count, " x ",
           dtype_size(dtype), " bytes, more than the ", left, " bytes left of the build's budget of ", b.limit,
           " bytes (nn::BuildOptions().max_bytes(...) raises it)");
  const std::uint64_t bytes = count * dtype_size(dtype);
  b.used += bytes;
}

std::shared_ptr<Module> build_module(const SpecNode& node, const BuildOptions& options) {
  Budget budget{options.max_bytes_, 0};
  Budget* const outer = active_budget;
  if (outer == nullptr) active_budget = &budget;
  struct Restore {
    Budget* outer;
    ~Restore() { active_budget = outer; }
  } restore{outer};
  ModuleBuilder builder;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.builders.find(node.type);
    if (it == r.builders.end()) {
      std::string known;
      for (const auto& [name, b] : r.builders) known += (known.empty() ? "" : ", ") + name;
      CK_FAIL(at(node.position), "unknown module type '", node.type, "' (known: ", known, ")");
    }
    builder = it->second;
  }
  SpecArgs args(node);
  std::shared_ptr<Module> module;
  try {
    module = builder(args);
  } catch (const Error& e) {
    // Errors from a constructor (e.g. "Conv2d: channels must be positive")
    // get the position; the spec's own errors carry it already.
    const std::string what = e.what();
    if (what.rfind("model spec:", 0) == 0) throw;
    // Constructor messages usually start with the type ("Conv2d: ..."); do not repeat it.
    throw Error(what.rfind(node.type + ":", 0) == 0 ? at(node.position) + what : args.where() + what);
  }
  args.finish();
  CK_CHECK(module != nullptr, args.where(), "the registered builder returned no module");
  return module;
}

std::shared_ptr<Module> build_module(const std::string& spec, const BuildOptions& options) {
  return build_module(parse_spec(spec), options);
}

}  // namespace convkit::nn
