#pragma once
// A file written so that readers see either the old file or the complete new
// one, never a torn mix: the bytes go to a temporary file in the same
// directory (so the rename cannot cross file systems), which is fsync'd,
// renamed over the target, and the directory fsync'd so the rename itself
// survives a crash. Destroying an AtomicFile that was not committed removes
// the temporary and leaves the target untouched.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace convkit::io::detail {

class AtomicFile {
 public:
  // `op` names the caller in errors ("save_checkpoint").
  AtomicFile(std::string path, std::string op);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t n);
  void write(const std::string& bytes) { write(bytes.data(), bytes.size()); }
  std::uint64_t bytes_written() const { return written_; }
  // Publishes the file under its final name.
  void commit();

 private:
  void flush();
  [[noreturn]] void fail(const std::string& what, int error) const;

  std::string path_, temp_, op_;
  int fd_ = -1;
  std::vector<char> buffer_;
  std::uint64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace convkit::io::detail
