#pragma once
// Helpers for the io tests: a scratch directory, raw file bytes, exact
// tensor comparison, and error assertions.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "support/support.h"

namespace convkit::io_testing {

// A fresh directory under the test temp dir, removed with its contents at the end.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("convkit_io_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Every entry's name, hidden ones included (to catch leftover temporaries).
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename().string());
    return out;
  }

 private:
  std::filesystem::path path_;
};

inline std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  // A new file rather than a truncated one: ext4 flushes a file rewritten
  // through truncation on close (auto_da_alloc), which makes the loops over
  // thousands of damaged files take seconds instead of milliseconds.
  std::filesystem::remove(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Offset of the first occurrence of `text` in bytes, or npos.
inline std::size_t find(const std::vector<unsigned char>& bytes, const std::string& text, std::size_t from = 0) {
  auto it = std::search(bytes.begin() + static_cast<std::ptrdiff_t>(from), bytes.end(), text.begin(), text.end());
  return it == bytes.end() ? std::string::npos : static_cast<std::size_t>(it - bytes.begin());
}

// Same dtype, shape and bytes.
inline ::testing::AssertionResult same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    return ::testing::AssertionFailure() << a.dtype() << a.shape() << " vs " << b.dtype() << b.shape();
  }
  const Tensor x = a.detach().to(kCPU).contiguous(), y = b.detach().to(kCPU).contiguous();
  const std::size_t n = static_cast<std::size_t>(x.numel()) * dtype_size(x.dtype());
  if (n && std::memcmp(x.raw_data(), y.raw_data(), n) != 0) return ::testing::AssertionFailure() << "bytes differ";
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult same_bits(const StateDict& a, const StateDict& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " tensors";
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first) return ::testing::AssertionFailure() << a[i].first << " vs " << b[i].first;
    auto r = same_bits(a[i].second, b[i].second);
    if (!r) return r << " in " << a[i].first;
  }
  return ::testing::AssertionSuccess();
}

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

}  // namespace convkit::io_testing
