#include "layer_sets.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "convkit/core/error.h"
#include "convkit/ops/conv.h"

namespace convkit::bench {

namespace {

// Where the current line came from, prefixed to every message.
struct Where {
  const std::string& source;
  int line;
};

template <typename... Args>
[[noreturn]] void fail(const Where& at, Args&&... args) {
  CK_FAIL("layer sets ", at.source, ":", at.line, ": ", std::forward<Args>(args)...);
}

std::vector<std::string> split_words(std::string_view line) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const std::size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) words.emplace_back(line.substr(start, i - start));
  }
  return words;
}

std::int64_t parse_positive(const Where& at, std::string_view text, const char* what) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v <= 0)
    fail(at, what, " must be a positive integer, got '", text, "'");
  return v;
}

// "32" (square) or "32x28".
std::pair<std::int64_t, std::int64_t> parse_pair(const Where& at, std::string_view text, const char* what,
                                                 bool allow_zero = false) {
  const std::size_t x = text.find('x');
  auto one = [&](std::string_view part) {
    if (allow_zero && part == "0") return std::int64_t{0};
    return parse_positive(at, part, what);
  };
  if (x == std::string_view::npos) {
    const std::int64_t v = one(text);
    return {v, v};
  }
  return {one(text.substr(0, x)), one(text.substr(x + 1))};
}

bool valid_set_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
         });
}

bool valid_layer_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
         });
}

LayerEntry parse_layer(const Where& at, const std::vector<std::string>& words) {
  if (words.size() < 6)
    fail(at, "a layer needs at least NAME N C HxW K RxS, got ", words.size(), " fields");
  LayerEntry e;
  e.line = at.line;
  e.name = words[0];
  if (!valid_layer_name(e.name)) fail(at, "layer name '", e.name, "' may hold only letters, digits, '_', '.', '-'");
  const std::int64_t n = parse_positive(at, words[1], "N (batch)");
  const std::int64_t c = parse_positive(at, words[2], "C (input channels)");
  const auto [h, w] = parse_pair(at, words[3], "HxW (input size)");
  const std::int64_t k = parse_positive(at, words[4], "K (filters)");
  const auto [r, s] = parse_pair(at, words[5], "RxS (filter size)");

  Conv2dParams params;
  bool have_stride = false, have_pad = false, have_count = false;
  for (std::size_t i = 6; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "same" || word[0] == 'p') {
      if (have_pad) fail(at, "padding given twice ('", word, "')");
      have_pad = true;
      if (word == "same") {
        params.padding_same();
      } else {
        const auto [ph, pw] = parse_pair(at, std::string_view(word).substr(1), "padding", true);
        params.padding(ph, pw);
      }
    } else if (word[0] == 's') {
      if (have_stride) fail(at, "stride given twice ('", word, "')");
      have_stride = true;
      const auto [sh, sw] = parse_pair(at, std::string_view(word).substr(1), "stride");
      params.stride(sh, sw);
    } else if (word[0] == 'x') {
      if (have_count) fail(at, "count given twice ('", word, "')");
      have_count = true;
      e.count = parse_positive(at, std::string_view(word).substr(1), "count");
    } else {
      fail(at, "unknown field '", word, "' (expected sS, pP, same or xCOUNT)");
    }
  }
  try {
    e.desc = make_conv2d_desc(Shape{n, c, h, w}, Shape{k, c, r, s}, params);
  } catch (const Error& err) {
    fail(at, "layer ", e.name, " is not a valid convolution: ", err.what());
  }
  return e;
}

}  // namespace

std::vector<LayerSet> parse_layer_sets(std::string_view text, const std::string& source) {
  std::vector<LayerSet> sets;
  std::set<std::string> set_names, layer_names;
  int line_number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    const Where at{source, line_number};
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const std::vector<std::string> words = split_words(line);
    if (words.empty()) continue;

    if (words[0] == "set") {
      if (words.size() < 2) fail(at, "'set' needs a name");
      if (!valid_set_name(words[1]))
        fail(at, "set name '", words[1], "' may hold only lower-case letters, digits and '-'");
      if (!set_names.insert(words[1]).second) fail(at, "set ", words[1], " is defined twice");
      if (!sets.empty() && sets.back().layers.empty()) fail(at, "set ", sets.back().name, " has no layers");
      LayerSet s;
      s.name = words[1];
      for (std::size_t i = 2; i < words.size(); ++i) s.description += (i > 2 ? " " : "") + words[i];
      sets.push_back(std::move(s));
      layer_names.clear();
      continue;
    }
    if (sets.empty()) fail(at, "a layer comes before any 'set NAME' line");
    LayerEntry e = parse_layer(at, words);
    if (!layer_names.insert(e.name).second) fail(at, "layer ", e.name, " appears twice in set ", sets.back().name);
    sets.back().layers.push_back(std::move(e));
  }
  CK_CHECK(!sets.empty(), "layer sets ", source, ": no sets defined");
  CK_CHECK(!sets.back().layers.empty(), "layer sets ", source, ": set ", sets.back().name, " has no layers");
  return sets;
}

std::vector<LayerSet> load_layer_sets(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CK_CHECK(in, "layer sets: cannot open '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  CK_CHECK(!in.bad(), "layer sets: error reading '", path, "'");
  return parse_layer_sets(text.str(), path);
}

std::string default_layer_sets_path() { return CONVKIT_LAYER_SETS_FILE; }

const LayerSet& find_layer_set(const std::vector<LayerSet>& sets, std::string_view name) {
  for (const LayerSet& s : sets)
    if (s.name == name) return s;
  std::string known;
  for (const LayerSet& s : sets) known += (known.empty() ? "" : ", ") + s.name;
  CK_FAIL("no layer set named '", name, "'; the sets are: ", known);
}

std::int64_t BatchScaling::apply(std::int64_t n) const {
  CK_CHECK(scale > 0 && std::isfinite(scale), "batch scale must be a positive number, got ", scale);
  CK_CHECK(max_batch >= 0, "max batch must be >= 0 (0: no cap), got ", max_batch);
  std::int64_t scaled = std::max<std::int64_t>(1, std::llround(static_cast<double>(n) * scale));
  if (max_batch > 0) scaled = std::min(scaled, max_batch);
  return scaled;
}

Conv2dDesc BatchScaling::apply(const Conv2dDesc& desc) const {
  Conv2dDesc d = desc;
  d.N = apply(desc.N);
  return d;
}

}  // namespace convkit::bench
