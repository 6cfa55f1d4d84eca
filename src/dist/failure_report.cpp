#include "dist/failure_report.h"

#include <sstream>

namespace convkit::dist {
namespace {

// "its last was #56"; streamed, not concatenated (g++ 12's -Wrestrict
// misfires on string + to_string at -O3).
void put_last(std::ostream& os, std::int64_t last) {
  if (last == 0) {
    os << "it reached none";
  } else {
    os << "its last was #" << last;
  }
}

std::string seconds_text(double seconds) {
  std::ostringstream os;
  os << seconds;
  return os.str();
}

bool reached(const StalledCollective& stalled, const PeerProgress& peer) {
  return stalled.end_of_job ? peer.left : peer.last_reached >= stalled.seq;
}

}  // namespace

std::string timeout_report(const StalledCollective& stalled, const std::vector<PeerProgress>& peers) {
  std::ostringstream os;
  os << "convkit: rank " << stalled.rank << ": " << stalled.what << " did not complete within "
     << seconds_text(stalled.timeout_seconds) << " s: ";
  bool any_missing = false;
  for (const PeerProgress& peer : peers) {
    if (reached(stalled, peer)) continue;
    os << (any_missing ? ", " : "") << "rank " << peer.rank << " never reached it (";
    put_last(os, peer.last_reached);
    os << (peer.left ? ", and it left the job" : "") << ")";
    any_missing = true;
  }
  if (!any_missing) {
    // Every peer got there, so one of them died or stalled inside it (or the
    // network did); MPI cannot tell which.
    os << "every rank reached it (";
    for (std::size_t i = 0; i < peers.size(); ++i) os << (i ? ", " : "") << peers[i].rank;
    os << (peers.empty() ? "no other rank" : "") << "), so a rank died or stalled inside it";
  }
  os << "; aborting the job";
  return os.str();
}

std::string departed_peer_report(const StalledCollective& stalled, const PeerProgress& peer) {
  std::ostringstream os;
  os << "convkit: rank " << stalled.rank << ": " << stalled.what << " cannot complete: rank " << peer.rank
     << " left the job after ";
  if (peer.last_reached == 0) {
    os << "no collective";
  } else {
    os << "#" << peer.last_reached;
  }
  os << " (every rank must issue the same collectives); aborting the job";
  return os.str();
}

}  // namespace convkit::dist
