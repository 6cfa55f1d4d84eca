#pragma once
// A file written so that readers see either the old file or the complete new
// one, never a torn mix: the bytes go to a temporary file in the same
// directory (so the rename cannot cross file systems), which is fsync'd,
// renamed over the target, and the directory fsync'd so the rename itself
// survives a crash. Destroying an AtomicFile that was not committed removes
// the temporary and leaves the target untouched; the temporary of a writer
// that was killed outright is removed by the next save of the same target.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace convkit::io::detail {

// A test seam for I/O faults (a full disk, an I/O error, a crash at a chosen
// point of a save). When set, it is called before each system call that
// writes, syncs or publishes an AtomicFile, with the bytes written so far;
// a non-zero return is an errno value that the call then fails with, as the
// system would report it. The hook may also end the process (raise SIGKILL)
// to crash at that exact point. Unset, the cost is one atomic load per
// flush of the 1 MiB buffer.
enum class IoStage { write, fsync, rename };
using IoFaultHook = int (*)(IoStage stage, std::uint64_t bytes_so_far);
// Returns the previous hook; nullptr removes it.
IoFaultHook set_io_fault_hook(IoFaultHook hook);

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
  std::uint64_t written_ = 0;  // handed to write()
  std::uint64_t flushed_ = 0;  // handed to the file system
  bool committed_ = false;
};

}  // namespace convkit::io::detail
