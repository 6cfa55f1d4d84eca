// The device group: a ProcessGroup over a backend's DeviceCommunicator
// (convkit/backend/device_communicator.h). The communicator enqueues; this
// numbers, holds the tensors in flight, polls against the timeout, and
// turns a stalled or failed collective into the job's end.
#include "convkit/dist/device_group.h"

#include <chrono>
#include <deque>
#include <mutex>
#include <thread>

#include "convkit/backend/backend.h"
#include "convkit/core/error.h"
#include "convkit/ops/factory.h"
#include "dist/collective_check.h"
#include "dist/end_job.h"
#include "dist/failure_report.h"
#include "dist/poll_back_off.h"
#include "dist/timeout_setting.h"

namespace convkit::dist {
namespace {

using Clock = std::chrono::steady_clock;

class DeviceGroup final : public ProcessGroup, public std::enable_shared_from_this<DeviceGroup> {
 public:
  DeviceGroup(std::unique_ptr<DeviceCommunicator> comm, double timeout_seconds)
      : timeout_seconds_(timeout_seconds), comm_(std::move(comm)) {}
  // The communicator goes first (members die in reverse order): it waits for
  // what was issued while in_flight_ still holds the tensors.
  ~DeviceGroup() override = default;

  int rank() const override { return comm_->rank(); }
  int size() const override { return comm_->size(); }
  std::string backend() const override { return comm_->library(); }
  Device device() const override { return comm_->device(); }

  std::shared_ptr<Work> allreduce_sum(Tensor tensor) override { return issue("allreduce_sum", std::move(tensor), -1); }
  std::shared_ptr<Work> broadcast(Tensor tensor, int root) override {
    check_root("broadcast", root, size());  // before issue(), which takes a negative root for "none"
    return issue("broadcast", std::move(tensor), root);
  }
  // Neither NCCL nor its emulation has a barrier: a one-element all-reduce
  // is one, since no rank's completes before every rank has issued it.
  void barrier() override {
    issue("barrier", zeros({1}, TensorOptions().device(device())), -1)->wait();
  }

  // DeviceWork::wait.
  void wait_for(std::int64_t number) {
    std::unique_lock lock(mutex_);
    const InFlight* c = find(number);
    if (!c) return;  // seen complete already
    const auto deadline = c->issued_at + std::chrono::duration<double>(timeout_seconds_);
    for (int polls = 0;; ++polls) {
      if (poll(number)) return;
      // Collectives complete in issue order: the earliest one still in
      // flight is the one that stalled (its deadline passed first).
      if (Clock::now() >= deadline) stalled(in_flight_.front());
      lock.unlock();
      poll_back_off(polls);
      lock.lock();
    }
  }

 private:
  struct InFlight {
    std::int64_t number = 0;
    std::string what;  // "allreduce_sum #4 (float32 [4])"
    Tensor tensor;     // held until complete, whatever the caller does with its handle
    Clock::time_point issued_at;
  };

  class DeviceWork final : public Work {
   public:
    DeviceWork(std::shared_ptr<DeviceGroup> group, std::int64_t number)
        : group_(std::move(group)), number_(number) {}
    void wait() override { group_->wait_for(number_); }

   private:
    std::shared_ptr<DeviceGroup> group_;
    std::int64_t number_;
  };

  std::shared_ptr<Work> issue(const char* op, Tensor tensor, int root) {
    // The caller's mistakes are Errors on its thread and take no number.
    check_communicator_tensor(op, tensor, device());
    if (root >= 0) check_root(op, root, size());
    std::lock_guard lock(mutex_);
    const std::int64_t expected = issued_ + 1;
    std::string what = convkit::detail::concat(op, " #", expected);
    if (root >= 0) what += convkit::detail::concat(" from rank ", root);
    what += " (" + describe_tensor(tensor) + ")";
    std::int64_t number = 0;
    try {
      number = root >= 0 ? comm_->broadcast(tensor, root) : comm_->allreduce_sum(tensor);
    } catch (const Error& e) {
      failed(what, e.what());
    }
    issued_ = number;
    in_flight_.push_back(InFlight{number, std::move(what), std::move(tensor), Clock::now()});
    // Forget what has completed, so that the list stays short when callers
    // drop their Work without waiting.
    poll(0);
    return std::make_shared<DeviceWork>(shared_from_this(), number);
  }

  const InFlight* find(std::int64_t number) const {
    for (const InFlight& c : in_flight_)
      if (c.number == number) return &c;
    return nullptr;
  }

  // True once `number` has completed; drops every completed collective.
  bool poll(std::int64_t number) {
    while (!in_flight_.empty()) {
      const InFlight& front = in_flight_.front();
      bool done = false;
      try {
        done = comm_->completed(front.number);
      } catch (const Error& e) {
        failed(front.what, e.what());
      }
      if (!done) break;
      in_flight_.pop_front();
    }
    return in_flight_.empty() || in_flight_.front().number > number;
  }

  [[noreturn]] void stalled(const InFlight& c) {
    StalledCollective what{rank(), c.what, c.number, false, timeout_seconds_};
    const std::vector<std::int64_t> issued = comm_->issued_by_rank();
    comm_->abort();
    std::string line;
    if (issued.empty()) {
      line = convkit::detail::concat("convkit: rank ", rank(), ": ", c.what, " on ", device(), " (", backend(),
                            ") did not complete within ", timeout_seconds_, " s; ", backend(),
                            " cannot tell which rank is missing (one never issued it, stalled or died); "
                            "aborting the job");
    } else {
      std::vector<PeerProgress> peers;
      for (int r = 0; r < static_cast<int>(issued.size()); ++r)
        if (r != rank()) peers.push_back(PeerProgress{r, issued[static_cast<std::size_t>(r)], false});
      line = timeout_report(what, peers);
    }
    detail::end_job(line);
  }

  [[noreturn]] void failed(const std::string& what, const std::string& why) {
    comm_->abort();
    detail::end_job(
        convkit::detail::concat("convkit: rank ", rank(), ": ", what, " failed: ", why, "; aborting the job"));
  }

  const double timeout_seconds_;
  std::mutex mutex_;
  std::deque<InFlight> in_flight_;  // issued, not seen complete, in order
  std::int64_t issued_ = 0;
  std::unique_ptr<DeviceCommunicator> comm_;
};

}  // namespace

bool device_group_available(Device device, std::string* why) {
  std::string reason;
  if (device.type == DeviceType::cpu) {
    reason = "cpu tensors travel over MPI (dist::world()); device groups are for sim and cuda";
  } else {
    try {
      const CommunicatorSupport s = backend_for(device).communicator_support();
      if (s.ok) return true;
      reason = s.detail;
    } catch (const Error& e) {
      reason = e.what();
    }
  }
  if (why) *why = reason;
  return false;
}

std::shared_ptr<ProcessGroup> device_group(Device device, const std::shared_ptr<ProcessGroup>& bootstrap,
                                           const ProcessGroupOptions& options) {
  CK_CHECK(bootstrap != nullptr, "dist::device_group: the bootstrap group is null");
  std::string why;
  CK_CHECK(device_group_available(device, &why), "dist::device_group(", device, "): ", why);
  const double timeout_seconds = resolve_timeout_seconds(options);
  Backend& backend = backend_for(device);
  // The id travels as one float32 per byte, which holds 0..255 exactly.
  Tensor carrier = zeros({static_cast<std::int64_t>(kCommunicatorIdBytes)}, TensorOptions().device(bootstrap->device()));
  if (bootstrap->rank() == 0) {
    const CommunicatorId id = backend.make_communicator_id();
    const std::vector<float> bytes(id.begin(), id.end());
    carrier.copy_(from_vector(bytes, {static_cast<std::int64_t>(bytes.size())}));
  }
  bootstrap->broadcast(carrier, 0)->wait();
  const std::vector<float> bytes = carrier.to(kCPU).to_vector<float>();
  CommunicatorId id{};
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<std::uint8_t>(bytes[i]);
  return std::make_shared<DeviceGroup>(
      backend.make_communicator(id, bootstrap->rank(), bootstrap->size(), device, timeout_seconds), timeout_seconds);
}

}  // namespace convkit::dist
