// nn::build_module_from_file: comments, and errors that name file, line and column.
#include <fstream>

#include "io/io_testing.h"

namespace convkit {
namespace {

using io_testing::ScratchDir;
using testing::throws_with;

std::string write(const ScratchDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

TEST(ModelSpecFile, BuildsTheModelWithCommentsIgnored) {
  ScratchDir dir;
  const std::string path = write(dir, "net.spec",
                                 "# a small classifier\n"
                                 "Sequential(\n"
                                 "  Conv2d(1, 4, 3),  # 28 -> 26\n"
                                 "  ReLU(),\n"
                                 "  Flatten(),\n"
                                 "  Linear(2704, 10))\n");
  const auto model = nn::build_module_from_file(path);
  EXPECT_EQ(model->spec(), nn::build_module("Sequential(Conv2d(1, 4, 3), ReLU(), Flatten(), Linear(2704, 10))")->spec());
  EXPECT_EQ(model->parameter_count(), 4 * 9 + 4 + 2704 * 10 + 10);
}

TEST(ModelSpecFile, ErrorsNameFileLineAndColumn) {
  ScratchDir dir;
  const std::string bad_option = write(dir, "a.spec", "Sequential(\n  ReLU(),\n  Conv2d(1, 4, 3, strides=2))\n");
  EXPECT_TRUE(throws_with([&] { nn::build_module_from_file(bad_option); },
                          {bad_option + ":3:", "strides"}));
  const std::string bad_syntax = write(dir, "b.spec", "# header\nSequential(ReLU() ReLU())\n");
  EXPECT_TRUE(throws_with([&] { nn::build_module_from_file(bad_syntax); }, {bad_syntax + ":2:19: ", "expected"}));
  const std::string unknown = write(dir, "c.spec", "\n\n  Sequentail()\n");
  EXPECT_TRUE(throws_with([&] { nn::build_module_from_file(unknown); },
                          {unknown + ":3:3: ", "unknown module type 'Sequentail'"}));
  EXPECT_TRUE(throws_with([&] { nn::build_module_from_file(dir.file("missing.spec")); },
                          {"missing.spec", "cannot open"}));
}

}  // namespace
}  // namespace convkit
