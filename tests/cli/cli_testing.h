#pragma once
// Running the convkit tool from a test, and checking what it says.
#include <gtest/gtest.h>

#include <string>

#include "generated_data.h"
#include "io/json.h"

namespace convkit::testing {

inline CommandResult convkit(const std::string& args) {
  return run_command(shell_quote(CONVKIT_CLI_PATH) + " " + args);
}

inline bool have_mpirun() { return run_command("command -v mpirun").status == 0; }

// The start of a command line that runs what follows on `ranks` ranks, one
// OpenMP thread each. OpenMPI refuses root without the two variables (CI runs
// as root); LeakSanitizer would report OpenMPI's own allocations at exit in
// the sanitized build.
inline std::string mpirun_prefix(int ranks) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 "
         "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" "
         "mpirun --oversubscribe -np " +
         std::to_string(ranks) + " ";
}

inline int count_lines(const std::string& text) {
  int n = 0;
  for (const char c : text) n += c == '\n';
  return n;
}

// A failure: non-zero exit, nothing on stdout, one line on stderr naming `part`.
inline void expect_one_line_error(const std::string& args, const std::string& part) {
  SCOPED_TRACE("convkit " + args);
  const CommandResult r = convkit(args);
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << "stderr '" << r.err << "' lacks '" << part << "'";
}

inline double number(const io::json::Value& object, const std::string& key) {
  const io::json::Value* v = object.find(key);
  if (v == nullptr || v->kind != io::json::Value::Kind::number) {
    ADD_FAILURE() << "JSON lacks number '" << key << "'";
    return 0;
  }
  return std::stod(v->text);
}

inline std::string string_of(const io::json::Value& object, const std::string& key) {
  const io::json::Value* v = object.find(key);
  if (v == nullptr || v->kind != io::json::Value::Kind::string) {
    ADD_FAILURE() << "JSON lacks string '" << key << "'";
    return "";
  }
  return v->text;
}

}  // namespace convkit::testing
