#pragma once
// Helpers for the model spec, zoo and summary tests.
#include <functional>
#include <string>
#include <vector>

#include "support/support.h"

namespace convkit::models_testing {

// Runs fn and checks that it throws convkit::Error mentioning every fragment.
inline ::testing::AssertionResult throws_with(const std::function<void()>& fn,
                                              const std::vector<std::string>& fragments) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const auto& f : fragments) {
      if (what.find(f) == std::string::npos) {
        return ::testing::AssertionFailure() << "message lacks '" << f << "': " << what;
      }
    }
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no convkit::Error thrown";
}

// Same names, shapes and dtypes, in the same order.
inline ::testing::AssertionResult same_layout(const StateDict& a, const StateDict& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " tensors";
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || a[i].second.shape() != b[i].second.shape() ||
        a[i].second.dtype() != b[i].second.dtype()) {
      return ::testing::AssertionFailure() << "entry " << i << ": " << a[i].first << " " << a[i].second.shape()
                                           << " vs " << b[i].first << " " << b[i].second.shape();
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace convkit::models_testing
