// The NCCL communicator of the cuda plugin.
//
// Streams: the backend launches every kernel on the legacy default stream
// and copies synchronously. A collective on that stream would wait for the
// backward kernels still queued behind it and hold up the ones after it, so
// DistributedDataParallel's buckets would not overlap backward at all. Each
// communicator therefore has a stream of its own, created non-blocking (a
// blocking stream is serialised with the legacy stream implicitly, which
// would undo the point), and orders itself explicitly: an event recorded on
// the legacy stream when a collective is issued, which the communication
// stream waits for, so the collective reads the gradients every kernel
// issued before it wrote; and an event recorded after it on the
// communication stream, which completed() queries without blocking. Nothing
// orders the legacy stream after the collective: the caller may touch the
// tensor only once completed() said so, from the host, after which every
// kernel it launches comes later anyway.
//
// The communicator is non-blocking (ncclConfig_t::blocking = 0): its
// creation and each enqueue return at once and are polled, so that a rank
// that never joins costs a timeout, not a hang.
#include "gpu/nccl_communicator.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "convkit/core/error.h"

#if CONVKIT_HAVE_NCCL
#include <nccl.h>
#endif

namespace convkit::gpu {

#if CONVKIT_HAVE_NCCL

static_assert(sizeof(ncclUniqueId) == kCommunicatorIdBytes, "CommunicatorId must hold an ncclUniqueId");

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// NCCL_VERSION_CODE and ncclGetVersion: major * 10000 + minor * 100 + patch.
std::string version_text(int code) { return detail::concat(code / 10000, ".", code / 100 % 100, ".", code % 100); }

std::string nccl_error(const char* call, ncclResult_t r, ncclComm_t comm) {
  std::string out = detail::concat(call, " failed: ", ncclGetErrorString(r));
  const char* last = comm ? ncclGetLastError(comm) : nullptr;
  if (last && *last) out += detail::concat(" (", last, ")");
  return out;
}

void check_cuda(cudaError_t e, const char* call) {
  CK_CHECK(e == cudaSuccess, "nccl communicator: ", call, " failed: ", cudaGetErrorName(e), ": ",
           cudaGetErrorString(e));
}

// A non-blocking communicator's latest call (its creation, an enqueue) has
// finished when its state leaves ncclInProgress. Returns that state, or
// ncclInProgress when the deadline passed first.
ncclResult_t settle(ncclComm_t comm, Clock::time_point deadline) {
  for (int polls = 0;; ++polls) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (Clock::now() >= deadline) return ncclInProgress;
    if (polls >= 64) std::this_thread::sleep_for(std::chrono::microseconds(polls < 1024 ? 20 : 200));
  }
}

ncclDataType_t nccl_type(DType dtype) { return dtype == DType::float64 ? ncclFloat64 : ncclFloat32; }

class NcclCommunicator final : public DeviceCommunicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int size, Device device, double timeout_seconds)
      : comm_(comm), rank_(rank), size_(size), device_(device), timeout_seconds_(timeout_seconds) {
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check_cuda(cudaEventCreateWithFlags(&issued_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  }
  ~NcclCommunicator() override {
    if (!aborted_) {
      // What was issued runs to its end before the communicator goes.
      (void)cudaStreamSynchronize(stream_);
      ncclResult_t r = ncclCommFinalize(comm_);
      if (r == ncclSuccess || r == ncclInProgress)
        r = settle(comm_, deadline_after(timeout_seconds_));
      if (r == ncclSuccess) {
        (void)ncclCommDestroy(comm_);
      } else {
        (void)ncclCommAbort(comm_);
      }
    }
    for (auto& [number, event] : in_flight_) (void)cudaEventDestroy(event);
    for (cudaEvent_t event : spare_) (void)cudaEventDestroy(event);
    (void)cudaEventDestroy(issued_);
    (void)cudaStreamDestroy(stream_);
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  std::string library() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return device_; }

  std::int64_t allreduce_sum(const Tensor& tensor) override {
    check_communicator_tensor("allreduce_sum", tensor, device_);
    check_alive("allreduce_sum");
    order_after_kernels();
    // NCCL takes an empty collective as a no-op; skipping it keeps the
    // numbering without asking anything of NCCL.
    if (tensor.numel() > 0) {
      void* data = tensor.raw_data();
      enqueue("ncclAllReduce", ncclAllReduce(data, data, static_cast<std::size_t>(tensor.numel()),
                                             nccl_type(tensor.dtype()), ncclSum, comm_, stream_));
    }
    return mark_issued();
  }

  std::int64_t broadcast(const Tensor& tensor, int root) override {
    check_communicator_tensor("broadcast", tensor, device_);
    CK_CHECK(root >= 0 && root < size_, "dist::broadcast: root ", root, " is not a rank of this group (ranks 0..",
             size_ - 1, ")");
    check_alive("broadcast");
    order_after_kernels();
    if (tensor.numel() > 0) {
      void* data = tensor.raw_data();
      enqueue("ncclBroadcast", ncclBroadcast(data, data, static_cast<std::size_t>(tensor.numel()),
                                             nccl_type(tensor.dtype()), root, comm_, stream_));
    }
    return mark_issued();
  }

  bool completed(std::int64_t number) override {
    check_alive("completed");
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    CK_CHECK(r == ncclSuccess, nccl_error("ncclCommGetAsyncError", r, comm_));
    CK_CHECK(state == ncclSuccess || state == ncclInProgress,
             nccl_error("the NCCL communicator", state, comm_), " (a peer failed or left)");
    while (!in_flight_.empty()) {
      const auto [n, event] = in_flight_.front();
      const cudaError_t e = cudaEventQuery(event);
      if (e == cudaErrorNotReady) break;
      check_cuda(e, "cudaEventQuery");
      completed_ = n;
      spare_.push_back(event);
      in_flight_.pop_front();
    }
    return completed_ >= number;
  }

  void abort() override {
    if (aborted_) return;
    aborted_ = true;
    (void)ncclCommAbort(comm_);
  }

 private:
  void check_alive(const char* op) const {
    CK_CHECK(!aborted_, "nccl communicator: ", op, " after abort(); rank ", rank_, "'s communicator is gone");
  }

  // The collective starts after every kernel issued so far on the legacy stream.
  void order_after_kernels() {
    check_cuda(cudaEventRecord(issued_, cudaStreamLegacy), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream_, issued_, 0), "cudaStreamWaitEvent");
  }

  void enqueue(const char* call, ncclResult_t r) {
    if (r == ncclInProgress)
      r = settle(comm_, deadline_after(timeout_seconds_));
    CK_CHECK(r != ncclInProgress, call, " was still being enqueued after ", timeout_seconds_, " s");
    CK_CHECK(r == ncclSuccess, nccl_error(call, r, comm_));
  }

  std::int64_t mark_issued() {
    cudaEvent_t done = nullptr;
    if (spare_.empty()) {
      check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    } else {
      done = spare_.back();
      spare_.pop_back();
    }
    check_cuda(cudaEventRecord(done, stream_), "cudaEventRecord");
    in_flight_.emplace_back(++issued_count_, done);
    return issued_count_;
  }

  ncclComm_t comm_;
  const int rank_, size_;
  const Device device_;
  const double timeout_seconds_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t issued_ = nullptr;
  std::deque<std::pair<std::int64_t, cudaEvent_t>> in_flight_;  // issued, not seen complete, in order
  std::vector<cudaEvent_t> spare_;
  std::int64_t issued_count_ = 0;
  std::int64_t completed_ = 0;
  bool aborted_ = false;
};

}  // namespace

CommunicatorSupport nccl_support() {
  int runtime = 0;
  if (ncclGetVersion(&runtime) != ncclSuccess) return {false, "libnccl.so is present but ncclGetVersion failed"};
  return {true, detail::concat("nccl ", version_text(runtime), " (built with ", version_text(NCCL_VERSION_CODE), ")")};
}

CommunicatorId make_nccl_communicator_id() {
  ncclUniqueId unique{};
  const ncclResult_t r = ncclGetUniqueId(&unique);
  CK_CHECK(r == ncclSuccess, nccl_error("ncclGetUniqueId", r, nullptr));
  CommunicatorId id{};
  std::memcpy(id.data(), &unique, sizeof unique);
  return id;
}

std::unique_ptr<DeviceCommunicator> make_nccl_communicator(const CommunicatorId& id, int rank, int size,
                                                           Device device, double timeout_seconds) {
  CK_CHECK(device.type == DeviceType::cuda, "make_communicator: NCCL communicates cuda tensors, not ", device);
  CK_CHECK(size >= 1 && rank >= 0 && rank < size, "make_communicator: rank ", rank, " of ", size,
           " is not a rank of a group (0 <= rank < size)");
  CK_CHECK(timeout_seconds > 0, "make_communicator: the timeout must be positive, got ", timeout_seconds);
  // NCCL binds a communicator to the current device.
  check_cuda(cudaSetDevice(device.index), "cudaSetDevice");
  ncclUniqueId unique{};
  std::memcpy(&unique, id.data(), sizeof unique);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, size, unique, rank, &config);
  if (r == ncclSuccess || r == ncclInProgress)
    r = settle(comm, deadline_after(timeout_seconds));
  if (r != ncclSuccess) {
    const std::string why = r == ncclInProgress
                                ? detail::concat("not every one of the ", size, " ranks joined within ",
                                                 timeout_seconds, " s")
                                : nccl_error("ncclCommInitRankConfig", r, comm);
    if (comm) (void)ncclCommAbort(comm);
    CK_FAIL("make_communicator (nccl, rank ", rank, " of ", size, " on ", device, "): ", why);
  }
  try {
    return std::make_unique<NcclCommunicator>(comm, rank, size, device, timeout_seconds);
  } catch (...) {
    (void)ncclCommAbort(comm);
    throw;
  }
}

#else  // a plugin without NCCL

namespace {
const char* const kNoNccl =
    "this cuda plugin was built without NCCL (CONVKIT_NCCL=OFF, or nccl.h and libnccl.so were not found "
    "with the CUDA toolkit)";
}

CommunicatorSupport nccl_support() { return {false, kNoNccl}; }
CommunicatorId make_nccl_communicator_id() { CK_FAIL("make_communicator_id: ", kNoNccl); }
std::unique_ptr<DeviceCommunicator> make_nccl_communicator(const CommunicatorId&, int, int, Device, double) {
  CK_FAIL("make_communicator: ", kNoNccl);
}

#endif

}  // namespace convkit::gpu
