#pragma once
// Collectives between the devices of several ranks, run by the device's own
// library: NCCL for cuda (the plugin), and for sim the same calls emulated
// across thread-ranks of one process. The dist layer builds a ProcessGroup on
// it (convkit/dist/device_group.h) without any CUDA or NCCL header.
//
// The life of a communicator, as NCCL's:
//   rank 0:      id = backend.make_communicator_id();   // opaque bytes
//   every rank:  receives id from rank 0 over another channel (MPI)
//   every rank:  comm = backend.make_communicator(id, rank, size, device, timeout);
//   every rank:  n = comm->allreduce_sum(t);  ...  while (!comm->completed(n)) poll;
//
// Order: every rank must issue the same collectives in the same order; the
// k-th collective of each rank is numbered k (1, 2, ...). Each call only
// enqueues: it returns at once, and the tensor must be left alone (neither
// read nor written nor freed) until completed() says so.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit {

// NCCL's ncclUniqueId is 128 bytes (NCCL_UNIQUE_ID_BYTES); the emulation uses
// the same size, so whatever carries an id from rank 0 needs no size first.
inline constexpr std::size_t kCommunicatorIdBytes = 128;
using CommunicatorId = std::array<std::uint8_t, kCommunicatorIdBytes>;

// Whether a backend makes communicators, and what with.
struct CommunicatorSupport {
  bool ok = false;
  // What carries the collectives ("nccl 2.28.9 (runtime 2.28.9)", "sim: ..."),
  // or why this backend has none.
  std::string detail;
};

class DeviceCommunicator {
 public:
  // Waits for the collectives issued (not after abort()), then frees the
  // library's resources.
  virtual ~DeviceCommunicator() = default;

  // "nccl" or "sim": what the process group reports as its backend().
  virtual std::string library() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Device device() const = 0;

  // Sums `tensor` over the ranks, in place; returns the collective's number.
  // Checked first (check_communicator_tensor), so a refused call takes no
  // number and the ranks stay in step.
  virtual std::int64_t allreduce_sum(const Tensor& tensor) = 0;
  // Copies `root`'s tensor into every rank's, in place.
  virtual std::int64_t broadcast(const Tensor& tensor, int root) = 0;

  // True once collective `number` has completed on this rank (and so have
  // all before it). Never blocks. Throws Error when the communicator failed:
  // NCCL's asynchronous error, or ranks that the emulation saw issue
  // different collectives at the same number.
  virtual bool completed(std::int64_t number) = 0;

  // How many collectives each rank has issued, indexed by rank, where the
  // library can tell (the emulation sees every rank); empty where it cannot
  // (NCCL keeps no such count). A stalled collective's report names the
  // ranks that never issued it from this.
  virtual std::vector<std::int64_t> issued_by_rank() const { return {}; }

  // Gives up every collective in flight on this rank (ncclCommAbort): after
  // it, no call but the destructor is valid. The peers' collectives cannot
  // complete either; their own timeouts end them.
  virtual void abort() = 0;
};

// Throws Error naming `op`, the tensor (dtype, shape, device) and what is
// wrong unless it is a contiguous float32 or float64 tensor on `device`.
// Every communicator runs it before numbering a collective.
void check_communicator_tensor(const char* op, const Tensor& tensor, Device device);

}  // namespace convkit
