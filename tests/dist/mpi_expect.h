#pragma once
// The check programs run under mpirun (mpi_check, ddp_mpi_check) report each
// failed expectation on stderr, naming the rank, and exit non-zero when any
// failed: run_mpi.cmake reads the exit status and the "rank R: ok" lines.
#include <cstdio>
#include <string>

namespace convkit::testing {

inline int mpi_failures = 0;

inline void expect(bool ok, int rank, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
  ++mpi_failures;
}

}  // namespace convkit::testing
