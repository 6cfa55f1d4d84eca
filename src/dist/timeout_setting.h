#pragma once
// The collectives' timeout: the program's ProcessGroupOptions, unless the
// environment says otherwise (CONVKIT_DIST_TIMEOUT, seconds), so that the one
// running the job (the CLI's user, a test) can shorten or lengthen it without
// a rebuild, as NCCL's and gloo's environment variables do.
#include "convkit/dist/process_group.h"

namespace convkit::dist {

inline constexpr const char* kTimeoutEnv = "CONVKIT_DIST_TIMEOUT";

// The timeout in seconds: CONVKIT_DIST_TIMEOUT when set, else
// options.timeout_seconds. Throws Error naming the variable or the option
// when the value is not a positive finite number of seconds.
double resolve_timeout_seconds(const ProcessGroupOptions& options);

}  // namespace convkit::dist
