#pragma once
// Helpers shared by the libFuzzer harnesses: the input as a file, for the
// readers that take a path, and the one outcome every harness accepts.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace convkit::fuzz {

// Writes the input to one file per process (rewritten for every input) and
// returns its path.
inline std::string as_file(const std::uint8_t* data, std::size_t size) {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("convkit_fuzz_" + std::to_string(::getpid()))).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

// What a harness gives a model built from untrusted bytes: enough for every
// seed, small enough that libFuzzer's 2 GB RSS limit means a real leak.
inline constexpr std::uint64_t kBuildBudget = std::uint64_t{64} << 20;

}  // namespace convkit::fuzz
