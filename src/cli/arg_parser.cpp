#include "cli/arg_parser.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "convkit/core/error.h"

namespace convkit::cli {

bool help_requested(const Args& args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") return true;
  return false;
}

ParsedArgs::ParsedArgs(const Args& args, std::string command,
                       const std::vector<OptionSpec>& options)
    : command_(std::move(command)) {
  auto find = [&](const std::string& name) -> const OptionSpec* {
    for (const OptionSpec& o : options)
      if (name == o.name) return &o;
    return nullptr;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--") {
      CK_CHECK(arg.empty() || arg[0] != '-' || arg == "-" || arg.size() == 1 ||
                   !std::isalpha(static_cast<unsigned char>(arg[1])),
               "unknown option '", arg, "' (options start with --)");
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    const std::size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const OptionSpec* spec = find(name);
    if (spec == nullptr) {
      std::string known;
      for (const OptionSpec& o : options) known += std::string(known.empty() ? "" : ", ") + "--" + o.name;
      CK_FAIL("unknown option '--", name, "' (", command_, " takes ",
              known.empty() ? "no options" : known, ")");
    }
    if (spec->takes_value) {
      if (!inline_value) {
        CK_CHECK(i + 1 < args.size(), "option --", name, " needs a value");
        value = args[++i];
      }
      CK_CHECK(!value.empty(), "option --", name, " needs a non-empty value");
    } else {
      CK_CHECK(!inline_value, "option --", name, " takes no value");
    }
    CK_CHECK(values_.count(name) == 0, "option --", name, " given twice");
    values_[name] = value;
  }
}

void ParsedArgs::expect_positional(std::size_t min, std::size_t max, const char* what) const {
  if (positional_.size() < min) CK_FAIL("missing ", what);
  CK_CHECK(positional_.size() <= max, "unexpected argument '", positional_[max],
           "' (expected ", what, ")");
}

std::optional<std::string> ParsedArgs::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string ParsedArgs::value_or(const std::string& name, const std::string& fallback) const {
  return value(name).value_or(fallback);
}

std::int64_t ParsedArgs::int_or(const std::string& name, std::int64_t fallback,
                                std::int64_t min) const {
  const auto text = value(name);
  if (!text) return fallback;
  std::int64_t v = 0;
  const auto r = std::from_chars(text->data(), text->data() + text->size(), v);
  CK_CHECK(r.ec == std::errc() && r.ptr == text->data() + text->size(), "--", name,
           " expects an integer, got '", *text, "'");
  CK_CHECK(v >= min, "--", name, " must be >= ", min, ", got ", v);
  return v;
}

double ParsedArgs::real_or(const std::string& name, double fallback, double min_exclusive) const {
  const auto text = value(name);
  if (!text) return fallback;
  double v = 0;
  const auto r = std::from_chars(text->data(), text->data() + text->size(), v);
  CK_CHECK(r.ec == std::errc() && r.ptr == text->data() + text->size() && std::isfinite(v),
           "--", name, " expects a number, got '", *text, "'");
  CK_CHECK(v > min_exclusive, "--", name, " must be > ", min_exclusive, ", got ", v);
  return v;
}

}  // namespace convkit::cli
