#include "dist/mpi/progress_exchange.h"

#include <chrono>

namespace convkit::dist::mpi {
namespace {

constexpr int kProgressTag = 7301;
constexpr std::int64_t kReached = 1;
constexpr std::int64_t kLeaving = 2;

}  // namespace

ProgressExchange::ProgressExchange(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  inbox_.resize(static_cast<std::size_t>(size_));
  receives_.assign(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
  progress_.resize(static_cast<std::size_t>(size_));
  for (int peer = 0; peer < size_; ++peer) {
    progress_[static_cast<std::size_t>(peer)].rank = peer;
    if (peer != rank_) post_receive(peer);
  }
}

void ProgressExchange::post_receive(int peer) {
  const auto p = static_cast<std::size_t>(peer);
  MPI_Irecv(&inbox_[p], 2, MPI_INT64_T, peer, kProgressTag, comm_, &receives_[p]);
}

void ProgressExchange::send_to_all(Message message) {
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    Outgoing& out = sends_.emplace_back(Outgoing{message, MPI_REQUEST_NULL});
    MPI_Isend(&out.message, 2, MPI_INT64_T, peer, kProgressTag, comm_, &out.request);
  }
}

void ProgressExchange::announce_reached(std::int64_t seq) { send_to_all({kReached, seq}); }

void ProgressExchange::announce_leaving(std::int64_t last_seq) { send_to_all({kLeaving, last_seq}); }

void ProgressExchange::poll() {
  for (int peer = 0; peer < size_; ++peer) {
    const auto p = static_cast<std::size_t>(peer);
    // Messages from one peer arrive in the order it sent them (same tag,
    // same communicator), so a loop drains them oldest first.
    while (receives_[p] != MPI_REQUEST_NULL) {
      int arrived = 0;
      MPI_Test(&receives_[p], &arrived, MPI_STATUS_IGNORE);
      if (!arrived) break;
      PeerProgress& progress = progress_[p];
      if (inbox_[p].seq > progress.last_reached) progress.last_reached = inbox_[p].seq;
      if (inbox_[p].kind == kLeaving) {
        progress.left = true;  // its last message: receive no more
      } else {
        post_receive(peer);
      }
    }
  }
  while (!sends_.empty()) {
    int sent = 0;
    MPI_Test(&sends_.front().request, &sent, MPI_STATUS_IGNORE);
    if (!sent) break;
    sends_.pop_front();
  }
}

std::vector<PeerProgress> ProgressExchange::peers() const {
  std::vector<PeerProgress> out;
  for (const PeerProgress& p : progress_) {
    if (p.rank != rank_) out.push_back(p);
  }
  return out;
}

const PeerProgress* ProgressExchange::departed_before(std::int64_t seq) const {
  for (const PeerProgress& p : progress_) {
    if (p.rank != rank_ && p.left && p.last_reached < seq) return &p;
  }
  return nullptr;
}

void ProgressExchange::close() {
  for (MPI_Request& request : receives_) {
    if (request == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
  // Sixteen bytes go out eagerly, so the sends have finished or are about
  // to; one that has not within a second is let go rather than waited on.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!sends_.empty() && std::chrono::steady_clock::now() < deadline) poll();
  for (Outgoing& out : sends_) MPI_Request_free(&out.request);
  sends_.clear();
}

}  // namespace convkit::dist::mpi
