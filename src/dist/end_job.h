#pragma once
// How a rank ends the job after a failure no rank can recover from (a
// collective that timed out or failed): one line on standard error, then
// MPI_Abort when MPI runs in this process, which stops every rank, else
// std::abort. The MPI group's thread calls MPI_Abort itself; this is for the
// other groups (the device group), which wait on the caller's thread.
#include <functional>
#include <string>

namespace convkit::dist::detail {

[[noreturn]] void end_job(const std::string& line);

// A test seam: while a handler is set, end_job(line) calls it instead of
// ending the process. It must not return (a test's handler throws), else
// end_job aborts after all. Returns the previous handler; an empty one
// restores the default.
using EndJobHandler = std::function<void(const std::string& line)>;
EndJobHandler set_end_job_handler(EndJobHandler handler);

}  // namespace convkit::dist::detail
