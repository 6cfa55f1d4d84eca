#pragma once
// The one exception type of convkit. Messages name the op and, where they
// matter, the shapes, dtypes and devices involved, so a user can find the
// mistake without a debugger.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace convkit {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

}  // namespace convkit

// CK_CHECK(cond, parts...) throws convkit::Error with the parts streamed together.
#define CK_CHECK(cond, ...)                                               \
  do {                                                                    \
    if (!(cond)) throw ::convkit::Error(::convkit::detail::concat(__VA_ARGS__)); \
  } while (0)

#define CK_FAIL(...) throw ::convkit::Error(::convkit::detail::concat(__VA_ARGS__))
