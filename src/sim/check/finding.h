#pragma once
// A report of the sim checks, written on a fiber and finished on the OS
// thread's own stack: its code addresses become source lines only in render(),
// because symbolizing spawns addr2line (symbolize.h).
#include <exception>
#include <string>
#include <vector>

namespace convkit::sim::detail {

class Finding : public std::exception {
 public:
  // Appends plain text.
  Finding& text(std::string s);
  // Appends the source line of the code that called out at `return_address`.
  Finding& site(const void* return_address);
  // Appends the name of the function at `function` (a kernel).
  Finding& function(const void* function);

  std::string render() const;
  const char* what() const noexcept override { return "sim check report (not rendered yet)"; }

 private:
  enum class Kind { text, site, function };
  struct Piece {
    Kind kind;
    std::string text;
    const void* address = nullptr;
  };
  std::vector<Piece> pieces_;
};

}  // namespace convkit::sim::detail
