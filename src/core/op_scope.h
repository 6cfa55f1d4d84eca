#pragma once
// The op running on this thread, for errors raised below it (an allocation
// that fails names the op that asked). Ops open an OpScope with their name;
// the autograd engine opens one with each node's ("Conv2dBackward"). Scopes
// nest: an op that calls another is named with it, "clone in SumBackward".
// Opening one costs two thread-local stores and nothing is formatted until
// an error asks.
#include <string>

namespace convkit::detail {

// The innermost op, and the outermost when it differs; empty outside every scope.
std::string current_op();

class OpScope {
 public:
  explicit OpScope(const char* name) noexcept;
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  friend std::string current_op();
  const char* name_;
  const OpScope* outer_;
};

}  // namespace convkit::detail
