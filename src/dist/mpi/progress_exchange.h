#pragma once
// "I reached collective #N": before each collective a rank tells every other
// rank, with a small nonblocking message on a communicator of its own, and
// keeps the highest number each peer reported. When a collective times out,
// that is how the rank knows whom to name. A rank whose program ends says so
// too ("I am leaving after #N"), so that a peer waiting in a collective the
// leaver will never issue can abort at once instead of at the timeout.
//
// Every call is made on the group's thread, the only one that calls MPI.
#include <mpi.h>

#include <cstdint>
#include <deque>
#include <vector>

#include "dist/failure_report.h"

namespace convkit::dist::mpi {

class ProgressExchange {
 public:
  // Posts one receive per peer on `comm`, which the exchange uses alone.
  explicit ProgressExchange(MPI_Comm comm);
  ProgressExchange(const ProgressExchange&) = delete;
  ProgressExchange& operator=(const ProgressExchange&) = delete;

  void announce_reached(std::int64_t seq);
  void announce_leaving(std::int64_t last_seq);
  // Takes in whatever the peers have sent and lets finished sends go. Cheap
  // and nonblocking: the group calls it while it polls a collective.
  void poll();
  // Every other rank, by rank.
  std::vector<PeerProgress> peers() const;
  // A peer that left before reaching collective `seq`, or null.
  const PeerProgress* departed_before(std::int64_t seq) const;
  // Cancels the receives and settles the sends; before MPI_Comm_free.
  void close();

 private:
  struct Message {
    std::int64_t kind;
    std::int64_t seq;
  };
  struct Outgoing {
    Message message;
    MPI_Request request;
  };
  void send_to_all(Message message);
  void post_receive(int peer);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<Message> inbox_;          // one slot per rank, never resized
  std::vector<MPI_Request> receives_;   // MPI_REQUEST_NULL once a peer left
  std::deque<Outgoing> sends_;          // a deque: pushing keeps buffers in place
  std::vector<PeerProgress> progress_;  // by rank; this rank's entry unused
};

}  // namespace convkit::dist::mpi
