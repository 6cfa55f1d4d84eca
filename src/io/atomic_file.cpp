#include "io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "convkit/core/error.h"

namespace convkit::io::detail {

namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

std::atomic<IoFaultHook> g_fault_hook{nullptr};

// 0, or the errno an injected fault fails this call with.
int injected_fault(IoStage stage, std::uint64_t bytes) {
  const IoFaultHook hook = g_fault_hook.load(std::memory_order_acquire);
  return hook ? hook(stage, bytes) : 0;
}

std::string parent_dir(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// ".NAME.tmp.": the start of every temporary of the target NAME.
std::string temp_prefix(const std::filesystem::path& target) {
  std::string prefix = ".";  // appended piecewise: GCC 12 misreads "." + name (-Wrestrict)
  prefix += target.filename().string();
  prefix += ".tmp.";
  return prefix;
}

// A save killed outright (SIGKILL, a power cut) cannot remove its temporary.
// The next save of the same target does: a temporary whose writer process no
// longer exists can never be renamed by anyone. One whose process id is alive
// is left alone, since that process may still be writing it (or the id was
// reused, and it is merely kept one save longer).
void remove_stale_temporaries(const std::filesystem::path& target) {
  const std::string prefix = temp_prefix(target);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    // What follows the prefix is "PID.COUNTER".
    const std::string_view rest = std::string_view(name).substr(prefix.size());
    const std::size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string_view::npos) continue;
    long long pid = 0;
    bool digits = true;
    for (char c : rest.substr(0, dot)) {
      if (c < '0' || c > '9' || pid > 1'000'000'000) { digits = false; break; }
      pid = pid * 10 + (c - '0');
    }
    if (!digits || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;  // another save may have removed it first
      std::filesystem::remove(it->path(), ignored);
    }
  }
}

}  // namespace

IoFaultHook set_io_fault_hook(IoFaultHook hook) { return g_fault_hook.exchange(hook); }

AtomicFile::AtomicFile(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
  CK_CHECK(!path_.empty(), op_, ": the path is empty");
  const std::filesystem::path target(path_);
  CK_CHECK(target.has_filename(), op_, ": '", path_, "' names a directory, not a file");
  // A name no other writer uses: the process id and a per-process counter;
  // O_EXCL makes sure, and a stale temporary from a crash is skipped over.
  static std::atomic<std::uint64_t> counter{0};
  remove_stale_temporaries(target);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = temp_prefix(target);
    name += std::to_string(::getpid());
    name += '.';
    name += std::to_string(counter++);
    temp_ = (target.parent_path() / name).string();
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int error = errno;
    temp_.clear();
    fail("cannot create a temporary file in '" + parent_dir(path_) + "'", error);
  }
  buffer_.reserve(kBufferBytes);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& what, int error) const {
  CK_FAIL(op_, ": '", path_, "': ", what, error ? std::string(": ") + std::strerror(error) : std::string());
}

void AtomicFile::flush() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    if (const int fault = injected_fault(IoStage::write, flushed_ + done)) {
      fail("writing '" + temp_ + "' failed", fault);
    }
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("writing '" + temp_ + "' failed", errno);
    }
    done += static_cast<std::size_t>(n);
  }
  flushed_ += done;
  buffer_.clear();
}

void AtomicFile::write(const void* data, std::size_t n) {
  CK_CHECK(!committed_, op_, ": '", path_, "': write after commit");
  const char* bytes = static_cast<const char*>(data);
  written_ += n;
  while (n > 0) {
    const std::size_t take = std::min(n, kBufferBytes - buffer_.size());
    buffer_.insert(buffer_.end(), bytes, bytes + take);
    bytes += take;
    n -= take;
    if (buffer_.size() == kBufferBytes) flush();
  }
}

void AtomicFile::commit() {
  CK_CHECK(!committed_, op_, ": '", path_, "': committed twice");
  flush();
  if (const int fault = injected_fault(IoStage::fsync, flushed_))
    fail("fsync of '" + temp_ + "' failed", fault);
  if (::fsync(fd_) != 0) fail("fsync of '" + temp_ + "' failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("closing '" + temp_ + "' failed", errno);
  if (const int fault = injected_fault(IoStage::rename, flushed_))
    fail("renaming '" + temp_ + "' over it failed", fault);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("renaming '" + temp_ + "' over it failed", errno);
  committed_ = true;
  // Make the rename durable. Some file systems cannot fsync a directory; the
  // data is already safe then, so that is not an error.
  const int dir = ::open(parent_dir(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace convkit::io::detail
