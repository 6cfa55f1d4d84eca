// libFuzzer: the convkit tool's argument parser on arbitrary argument lists.
// The input is the arguments separated by NUL bytes, parsed against train's
// options (flags, options with values, "--name=value"), then read back the
// way the commands read them: integers and reals with their bounds.
#include <string>
#include <vector>

#include "cli/arg_parser.h"
#include "convkit/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace convkit::cli;
  Args args(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) args.emplace_back();
    else args.back() += static_cast<char>(data[i]);
  }
  try {
    if (help_requested(args)) return 0;
    const ParsedArgs p(args, "train",
                       {{"data", true}, {"epochs", true}, {"lr", true}, {"augment", false},
                        {"workers", true}, {"json", false}});
    p.expect_positional(0, 2, "MODEL");
    (void)p.int_or("epochs", 5, 1);
    (void)p.int_or("workers", 1, 0);
    (void)p.real_or("lr", 0.001, 0.0);
    (void)p.value_or("data", "fashion-mnist");
    (void)p.flag("augment");
  } catch (const convkit::Error&) {
  }
  return 0;
}
