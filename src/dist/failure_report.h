#pragma once
// The one line a rank prints before it aborts the job: which collective did
// not complete, and which ranks are to blame, from what each peer last
// reported (src/dist/mpi/: every rank tells every other "I reached #N").
// Pure formatting, so the wording is tested without a job to break.
#include <cstdint>
#include <string>
#include <vector>

namespace convkit::dist {

// What this rank knows of one peer when its collective timed out.
struct PeerProgress {
  int rank = 0;
  // The highest collective number the peer said it reached; 0 when none.
  std::int64_t last_reached = 0;
  // The peer said it was leaving (its program ended) after `last_reached`.
  bool left = false;
};

// What timed out on this rank.
struct StalledCollective {
  int rank = 0;  // this rank
  // "allreduce_sum #57 (float32 [1234])", or for the handshake at the end of
  // the program, "the end of the job (after #56)".
  std::string what;
  // The collective's number; a peer reached it when it reported seq or more.
  std::int64_t seq = 0;
  // The end-of-job handshake, which a peer reaches by leaving.
  bool end_of_job = false;
  double timeout_seconds = 0;
};

// "convkit: rank 0: allreduce_sum #57 (float32 [1234]) did not complete within
// 30 s: rank 1 never reached it (its last was #56); aborting the job". Peers
// that reached it are named only when none is missing: one of them then died
// or stalled inside it. No newline.
std::string timeout_report(const StalledCollective& stalled, const std::vector<PeerProgress>& peers);

// A peer left the job (its program ended) before reaching a collective this
// rank is in: the job can never complete it, so this rank aborts at once.
// "convkit: rank 0: allreduce_sum #57 (float32 [4]) cannot complete: rank 1
// left the job after #56; aborting the job".
std::string departed_peer_report(const StalledCollective& stalled, const PeerProgress& peer);

}  // namespace convkit::dist
