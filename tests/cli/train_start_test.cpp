// `convkit train` from somewhere other than scratch: --init (fine-tuning,
// with --freeze and --new-head) and --spec (a model written as text). The
// checkpoints they write are read back to check what moved and what did not.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli_testing.h"
#include "convkit/io/checkpoint.h"
#include "convkit/nn/model_spec.h"
#include "convkit/nn/module.h"
#include "data/data_files.h"

namespace convkit::testing {
namespace {

namespace json = io::json;

std::vector<float> weights(const io::Checkpoint& ck, const std::string& key) {
  return find_tensor(ck.model_state, key).to_vector<float>();
}

// fmnist-cnn is Sequential(conv 0, relu, pool, conv 3, relu, pool, flatten,
// dense 7, relu, dropout, dense 10).
TEST(CliTrainStart, InitFineTunesAndFreezeKeepsLayersBitIdentical) {
  TempDir dir;
  const std::string fm = "--data fashion-mnist:" + shell_quote(dir.file("fm"));
  write_fashion_mnist_like(dir.file("fm"), 64, 32);
  const std::string base = dir.file("base"), tuned = dir.file("tuned");
  ASSERT_EQ(convkit("train fmnist-cnn " + fm + " --epochs 1 --batch 16 --progress none --out " + shell_quote(base))
                .status,
            0);
  const CommandResult r = convkit("train fmnist-cnn " + fm + " --epochs 1 --batch 16 --progress none --seed 2" +
                                  " --init " + shell_quote(base + "/last.ckpt") + " --freeze 3 --out " +
                                  shell_quote(tuned));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("frozen through layer 3: 4 parameter tensors (0.weight ... 3.bias)"), std::string::npos)
      << r.out;

  const io::Checkpoint before = io::load_checkpoint(base + "/last.ckpt");
  const io::Checkpoint after = io::load_checkpoint(tuned + "/last.ckpt");
  for (const char* frozen : {"0.weight", "0.bias", "3.weight", "3.bias"})
    EXPECT_EQ(weights(before, frozen), weights(after, frozen)) << frozen;
  for (const char* trained : {"7.weight", "10.weight", "10.bias"})
    EXPECT_NE(weights(before, trained), weights(after, trained)) << trained;
  // A fresh run: epoch 0 to 1 (not 1 to 2), and an optimizer that holds
  // state for the trainable parameters only.
  EXPECT_EQ(after.epoch, 1);
  EXPECT_EQ(after.get_metadata("init"), base + "/last.ckpt");
  EXPECT_EQ(find_tensor(after.optimizer_state, "state.0.step").item(), 4.0);  // 64 / 16 steps
  int with_state = 0;
  for (const auto& [key, t] : after.optimizer_state)
    with_state += key.rfind("state.", 0) == 0 && key.size() > 5 && key.substr(key.size() - 5) == ".step";
  EXPECT_EQ(with_state, 4);  // 7.weight, 7.bias, 10.weight, 10.bias
}

// Another class count: the last layer cannot load, so --init refuses and
// names --new-head; with it, every other layer loads. A shape mismatch
// elsewhere names the parameter and both shapes.
TEST(CliTrainStart, InitChecksShapesAndReplacesTheHeadOnlyWhenAsked) {
  TempDir dir;
  write_fashion_mnist_like(dir.file("fm"), 32, 16);
  write_image_folder(dir.file("abc"), {"a", "b", "c"}, 6, 30, 30);
  const std::string base = dir.file("base");
  ASSERT_EQ(convkit("train fmnist-cnn --data fashion-mnist:" + shell_quote(dir.file("fm")) +
                    " --epochs 1 --batch 16 --progress none --out " + shell_quote(base))
                .status,
            0);
  const std::string init = " --init " + shell_quote(base + "/last.ckpt");
  const std::string abc = "train fmnist-cnn --data folder:" + shell_quote(dir.file("abc")) +
                          " --epochs 1 --batch 8 --progress none";
  expect_one_line_error(abc + init, "the last layer '10' does not fit this model (10.weight: checkpoint [10, 128], "
                                    "model [3, 128]; 10.bias: checkpoint [10], model [3])");
  expect_one_line_error(abc + init, "pass --new-head");
  const std::string tuned = dir.file("tuned");
  const CommandResult r = convkit(abc + init + " --new-head --out " + shell_quote(tuned));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("(a fresh last layer)"), std::string::npos) << r.out;
  const io::Checkpoint after = io::load_checkpoint(tuned + "/last.ckpt");
  EXPECT_EQ(find_tensor(after.model_state, "10.weight").shape(), (Shape{3, 128}));

  std::ofstream(dir.file("narrow.spec"))
      << "Sequential(Conv2d(1, 8, 3, padding=same), ReLU(), MaxPool2d(2), Flatten(), Linear(1568, 10))";
  expect_one_line_error("train --spec " + shell_quote(dir.file("narrow.spec")) + " --data fashion-mnist:" +
                            shell_quote(dir.file("fm")) + init,
                        "0.weight: checkpoint [32, 1, 3, 3], model [8, 1, 3, 3]");
  expect_one_line_error(abc + " --new-head", "--new-head only applies with --init");
  expect_one_line_error(abc + init + " --resume " + shell_quote(base + "/last.ckpt"), "give one of them");
  // --resume continues the same run, so a new head is no option there.
  const CommandResult resumed = convkit(abc + " --resume " + shell_quote(base + "/last.ckpt"));
  EXPECT_NE(resumed.status, 0);
  EXPECT_NE(resumed.err.find("shape mismatches: 10.weight: checkpoint [10, 128], model [3, 128]"), std::string::npos)
      << resumed.err;
  EXPECT_EQ(resumed.err.find("--new-head"), std::string::npos) << resumed.err;
  expect_one_line_error(abc + " --freeze head", "--freeze head: the model has no such layer (its top-level "
                                                "layers: 0, 1, 2");
  expect_one_line_error(abc + " --freeze 11", "the model has 11 top-level layers (0 to 10)");
  expect_one_line_error(abc + " --freeze 10", "would freeze every parameter");
}

// A model written in the spec text trains, and its checkpoint serves
// predict, eval and inspect like a zoo model's.
TEST(CliTrainStart, SpecFileTrainsAModelTheOtherCommandsLoad) {
  TempDir dir;
  write_fashion_mnist_like(dir.file("fm"), 64, 32);
  const std::string spec = dir.file("small.spec");
  std::ofstream(spec) << "# 28x28 gray in, 10 classes out\n"
                         "Sequential(\n"
                         "  Conv2d(1, 4, 3),   # 26x26\n"
                         "  ReLU(),\n"
                         "  MaxPool2d(2),      # 13x13\n"
                         "  Flatten(),\n"
                         "  Linear(676, 10))\n";
  const std::string out = dir.file("run");
  const CommandResult r = convkit("train --spec " + shell_quote(spec) + " --data fashion-mnist:" +
                                  shell_quote(dir.file("fm")) + " --epochs 2 --batch 16 --json --progress none" +
                                  " --freeze 0 --out " + shell_quote(out));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_EQ(string_of(json::parse(r.last_line(), "train output"), "model"), spec);
  const std::string ckpt = shell_quote(out + "/last.ckpt");
  const io::Checkpoint ck = io::load_checkpoint(out + "/last.ckpt");
  EXPECT_EQ(ck.model_spec, nn::build_module_from_file(spec)->spec());
  EXPECT_EQ(ck.get_metadata("spec_file"), spec);

  const CommandResult eval = convkit("eval " + ckpt + " --json");
  ASSERT_EQ(eval.status, 0) << eval.err;
  EXPECT_EQ(number(json::parse(eval.last_line(), "eval output"), "test_images"), 32);
  const auto px = class_image(3, 10, 28, 28, 1, 7);
  write_bytes(dir.file("x.png"), png_bytes(28, 28, 1, px));
  const CommandResult predict = convkit("predict " + ckpt + " " + shell_quote(dir.file("x.png")) + " --top 1");
  ASSERT_EQ(predict.status, 0) << predict.err;
  const CommandResult inspect = convkit("inspect " + ckpt);
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("spec_file = " + spec), std::string::npos) << inspect.out;

  std::ofstream(dir.file("bad.spec")) << "Sequential(\n  Conv2d(1, 4, 3),\n  Linear(676, 10, bais=false))\n";
  expect_one_line_error("train --spec " + shell_quote(dir.file("bad.spec")) + " --data fashion-mnist:" +
                            shell_quote(dir.file("fm")),
                        dir.file("bad.spec") + ":3:");
  expect_one_line_error("train --spec " + shell_quote(dir.file("bad.spec")) + " fmnist-cnn", "not both");
  expect_one_line_error("train --spec " + shell_quote(dir.file("none.spec")), "none.spec: cannot open");
}

}  // namespace
}  // namespace convkit::testing
