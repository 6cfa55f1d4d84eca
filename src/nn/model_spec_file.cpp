// A model spec read from a file, with errors in the compiler's form
// (FILE:LINE:COLUMN: ...) rather than the parser's byte offsets.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "convkit/core/error.h"
#include "convkit/nn/model_spec.h"

namespace convkit::nn {

namespace {

// '#' is no token of the grammar, so a comment can be blanked to spaces,
// which keeps every byte offset (and so every line and column) in place.
std::string blank_comments(std::string text) {
  bool in_comment = false;
  for (char& c : text) {
    if (c == '#') in_comment = true;
    if (c == '\n') in_comment = false;
    if (in_comment) c = ' ';
  }
  return text;
}

// "model spec: at offset N: what" -> "PATH:LINE:COLUMN: what"; other
// messages get "PATH: " in front.
std::string locate(const std::string& message, const std::string& text, const std::string& path) {
  static const std::string prefix = "model spec: at offset ";
  if (message.rfind(prefix, 0) != 0) return path + ": " + message;
  std::size_t end = prefix.size();
  std::size_t offset = 0;
  while (end < message.size() && message[end] >= '0' && message[end] <= '9')
    offset = offset * 10 + static_cast<std::size_t>(message[end++] - '0');
  if (end == prefix.size() || message.compare(end, 2, ": ") != 0) return path + ": " + message;
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return path + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message.substr(end + 2);
}

}  // namespace

std::shared_ptr<Module> build_module_from_file(const std::string& path, const BuildOptions& options) {
  std::ifstream in(path, std::ios::binary);
  CK_CHECK(in.good(), "model spec file ", path, ": cannot open it (", std::strerror(errno), ")");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = blank_comments(buffer.str());
  try {
    return build_module(text, options);
  } catch (const Error& e) {
    throw Error(locate(e.what(), text, path));
  }
}

}  // namespace convkit::nn
