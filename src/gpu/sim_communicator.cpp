#include "gpu/sim_communicator.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <random>

#include "convkit/core/error.h"

namespace convkit::gpu {
namespace {

using Clock = std::chrono::steady_clock;

// Id layout: a tag, the making process's id, a serial number and random
// bytes (a process id can be reused); the rest is zero.
constexpr char kTag[4] = {'c', 'k', 's', 'm'};
constexpr std::size_t kPidAt = 4, kSerialAt = 12, kNonceAt = 20;

template <typename T>
T read_at(const CommunicatorId& id, std::size_t at) {
  T v;
  std::memcpy(&v, id.data() + at, sizeof v);
  return v;
}
template <typename T>
void write_at(CommunicatorId& id, std::size_t at, T v) {
  std::memcpy(id.data() + at, &v, sizeof v);
}

enum class Kind { allreduce_sum, broadcast };

// What one rank asked for at one collective number: all ranks must agree.
struct Signature {
  Kind kind = Kind::allreduce_sum;
  DType dtype = DType::float32;
  std::int64_t numel = 0;
  int root = 0;
  bool operator==(const Signature&) const = default;
};

std::string describe(const Signature& s) {
  std::string out = s.kind == Kind::allreduce_sum ? "allreduce_sum" : "broadcast";
  if (s.kind == Kind::broadcast) out += detail::concat(" from rank ", s.root);
  return out + detail::concat(" (", dtype_name(s.dtype), ", ", s.numel, " elements)");
}

// A collective that some rank has issued and not yet every rank.
struct Open {
  Signature signature;  // the first issuer's
  int first_rank = 0;
  std::vector<Tensor> tensors;  // per rank; held until the collective completes
  int arrived = 0;
};

template <typename T>
void run_collective(const Signature& s, const std::vector<Tensor>& tensors) {
  const auto n = static_cast<std::size_t>(s.numel);
  if (n == 0) return;
  std::vector<T> result(n);
  if (s.kind == Kind::broadcast) {
    std::memcpy(result.data(), tensors[static_cast<std::size_t>(s.root)].raw_data(), n * sizeof(T));
  } else {
    // In rank order, as the test groups sum, so runs are reproducible.
    std::memcpy(result.data(), tensors[0].raw_data(), n * sizeof(T));
    for (std::size_t r = 1; r < tensors.size(); ++r) {
      const T* x = static_cast<const T*>(tensors[r].raw_data());
      for (std::size_t i = 0; i < n; ++i) result[i] += x[i];
    }
  }
  // A sim device pointer is a host pointer (gpu/device_memory.h).
  for (const Tensor& t : tensors) std::memcpy(t.raw_data(), result.data(), n * sizeof(T));
}

class Clique {
 public:
  explicit Clique(int size) : size_(size), joined_(static_cast<std::size_t>(size), false),
                              issued_(static_cast<std::size_t>(size), 0) {}
  int size() const { return size_; }

  // Returns "" once every rank has joined, else why not.
  std::string join(int rank, double timeout_seconds) {
    std::unique_lock lock(mutex_);
    CK_CHECK(!joined_[static_cast<std::size_t>(rank)], "make_communicator: rank ", rank,
             " has already joined the communicator of this id; each rank joins once");
    joined_[static_cast<std::size_t>(rank)] = true;
    ++joined_count_;
    changed_.notify_all();
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
    if (changed_.wait_until(lock, deadline, [this] { return joined_count_ == size_; })) return "";
    std::string missing;
    for (int r = 0; r < size_; ++r)
      if (!joined_[static_cast<std::size_t>(r)]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    return detail::concat("rank ", missing, " of ", size_, " did not join within ", timeout_seconds, " s");
  }

  std::int64_t issue(int rank, const Signature& s, const Tensor& tensor) {
    std::lock_guard lock(mutex_);
    const std::int64_t number = ++issued_[static_cast<std::size_t>(rank)];
    Open& c = open_[number];
    if (c.arrived == 0) {
      c.signature = s;
      c.first_rank = rank;
      c.tensors.resize(static_cast<std::size_t>(size_));
    } else if (!(c.signature == s) && failed_at_ == 0) {
      // NCCL would hang or read past a buffer here; the emulation can say why.
      failed_at_ = number;
      failure_ = detail::concat("sim communicator: collective #", number, " differs between ranks: rank ",
                                c.first_rank, " issued ", describe(c.signature), ", rank ", rank, " ",
                                describe(s), "; every rank must issue the same collectives in the same order");
    }
    c.tensors[static_cast<std::size_t>(rank)] = tensor;
    if (++c.arrived == size_) {
      if (failed_at_ == 0 || number < failed_at_) {
        if (s.dtype == DType::float64) {
          run_collective<double>(c.signature, c.tensors);
        } else {
          run_collective<float>(c.signature, c.tensors);
        }
      }
      // Each rank issues in order, so every earlier number has completed.
      completed_ = number;
      open_.erase(number);
    }
    return number;
  }

  bool completed(std::int64_t number) {
    std::lock_guard lock(mutex_);
    CK_CHECK(failed_at_ == 0 || number < failed_at_, failure_);
    return completed_ >= number;
  }

  std::vector<std::int64_t> issued() {
    std::lock_guard lock(mutex_);
    return issued_;
  }

 private:
  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bool> joined_;
  int joined_count_ = 0;
  std::vector<std::int64_t> issued_;  // per rank
  std::map<std::int64_t, Open> open_;
  std::int64_t completed_ = 0;
  std::int64_t failed_at_ = 0;  // the first collective the ranks disagreed on; 0 while none
  std::string failure_;
};

// Cliques whose ranks are still joining, by id; an id is used up once all
// its ranks have joined (NCCL's ids are single-use too).
struct Registry {
  std::mutex mutex;
  std::map<CommunicatorId, std::shared_ptr<Clique>> joining;
  std::atomic<std::uint64_t> serial{0};
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: ranks may still join at exit
  return *r;
}

class SimCommunicator final : public DeviceCommunicator {
 public:
  SimCommunicator(std::shared_ptr<Clique> clique, int rank, Device device)
      : clique_(std::move(clique)), rank_(rank), device_(device) {}
  // Nothing of this rank's is in flight: a collective runs when its last
  // rank issues it, and the clique holds the tensors of the open ones.
  ~SimCommunicator() override = default;

  std::string library() const override { return "sim"; }
  int rank() const override { return rank_; }
  int size() const override { return clique_->size(); }
  Device device() const override { return device_; }

  std::int64_t allreduce_sum(const Tensor& tensor) override {
    check_communicator_tensor("allreduce_sum", tensor, device_);
    check_alive("allreduce_sum");
    return clique_->issue(rank_, {Kind::allreduce_sum, tensor.dtype(), tensor.numel(), 0}, tensor);
  }
  std::int64_t broadcast(const Tensor& tensor, int root) override {
    check_communicator_tensor("broadcast", tensor, device_);
    CK_CHECK(root >= 0 && root < size(), "dist::broadcast: root ", root, " is not a rank of this group (ranks 0..",
             size() - 1, ")");
    check_alive("broadcast");
    return clique_->issue(rank_, {Kind::broadcast, tensor.dtype(), tensor.numel(), root}, tensor);
  }
  bool completed(std::int64_t number) override {
    check_alive("completed");
    return clique_->completed(number);
  }
  std::vector<std::int64_t> issued_by_rank() const override { return clique_->issued(); }
  void abort() override { aborted_ = true; }

 private:
  void check_alive(const char* op) const {
    CK_CHECK(!aborted_, "sim communicator: ", op, " after abort(); rank ", rank_, "'s communicator is gone");
  }

  std::shared_ptr<Clique> clique_;
  const int rank_;
  const Device device_;
  bool aborted_ = false;
};

}  // namespace

CommunicatorId make_sim_communicator_id() {
  CommunicatorId id{};
  std::memcpy(id.data(), kTag, sizeof kTag);
  write_at<std::uint64_t>(id, kPidAt, static_cast<std::uint64_t>(::getpid()));
  write_at<std::uint64_t>(id, kSerialAt, registry().serial.fetch_add(1) + 1);
  std::random_device random;
  write_at<std::uint64_t>(id, kNonceAt, (static_cast<std::uint64_t>(random()) << 32) ^ random());
  return id;
}

std::unique_ptr<DeviceCommunicator> make_sim_communicator(const CommunicatorId& id, int rank, int size,
                                                          Device device, double timeout_seconds) {
  CK_CHECK(device.type == DeviceType::sim, "make_communicator: the sim backend makes communicators on sim, not ",
           device);
  CK_CHECK(size >= 1 && rank >= 0 && rank < size, "make_communicator: rank ", rank, " of ", size,
           " is not a rank of a group (0 <= rank < size)");
  CK_CHECK(timeout_seconds > 0, "make_communicator: the timeout must be positive, got ", timeout_seconds);
  CK_CHECK(std::memcmp(id.data(), kTag, sizeof kTag) == 0,
           "make_communicator: this id was not made by the sim backend's make_communicator_id()");
  const auto made_by = read_at<std::uint64_t>(id, kPidAt);
  CK_CHECK(made_by == static_cast<std::uint64_t>(::getpid()), "make_communicator: the sim communicator joins "
           "thread-ranks of one process, and this id was made by process ", made_by, ", not this one (",
           ::getpid(), "); across processes sim tensors travel over the MPI group (dist::world())");
  std::shared_ptr<Clique> clique;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto& slot = r.joining[id];
    if (!slot) slot = std::make_shared<Clique>(size);
    clique = slot;
  }
  CK_CHECK(clique->size() == size, "make_communicator: rank ", rank, " joins a group of ", size,
           " ranks, but another rank joined this id with ", clique->size());
  const std::string why = clique->join(rank, timeout_seconds);
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.joining.find(id);
    if (it != r.joining.end() && it->second == clique) r.joining.erase(it);
  }
  CK_CHECK(why.empty(), "make_communicator (sim): ", why);
  return std::make_unique<SimCommunicator>(std::move(clique), rank, device);
}

}  // namespace convkit::gpu
