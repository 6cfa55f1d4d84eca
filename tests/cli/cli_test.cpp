// The convkit tool end to end: every bad argument is one line on stderr and a
// non-zero exit; the good paths print what they promise, and --json ends
// with one parseable JSON object.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "convkit/core/host_info.h"
#include "convkit/io/checkpoint.h"
#include "convkit/io/safetensors.h"
#include "convkit/version.h"
#include "data/data_files.h"
#include "cli_testing.h"
#include "generated_data.h"
#include "io/json.h"

namespace convkit::testing {
namespace {

namespace json = io::json;

TEST(Cli, NoArgumentsPrintsUsageAndFails) {
  const CommandResult r = convkit("");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("usage: convkit"), std::string::npos);
  for (const char* command : {"train", "eval", "predict", "bench", "summary", "devices", "inspect", "export"})
    EXPECT_NE(r.err.find(command), std::string::npos) << command;
}

TEST(Cli, EveryCommandHasHelp) {
  for (const char* command : {"train", "eval", "predict", "bench", "summary", "devices", "inspect", "export"}) {
    const CommandResult r = convkit(std::string(command) + " --help");
    EXPECT_EQ(r.status, 0) << command;
    EXPECT_EQ(r.out.rfind(std::string("usage: convkit ") + command, 0), 0u) << r.out;
  }
  EXPECT_NE(convkit("train --help").out.find("--epochs E"), std::string::npos);
}

// main names the command once: "convkit train: unknown option ...".
TEST(Cli, ErrorsNameTheCommandOnce) {
  for (const char* command : {"train", "eval", "predict", "bench", "summary", "devices", "inspect", "export"}) {
    const CommandResult r = convkit(std::string(command) + " x --bogus");
    EXPECT_EQ(r.status, 2) << command;
    EXPECT_EQ(r.err.rfind(std::string("convkit ") + command + ": ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find(std::string(command) + ": ", 9 + std::string(command).size()), std::string::npos)
        << r.err;
  }
}

TEST(Cli, BadArgumentsAreOneLineErrors) {
  expect_one_line_error("frobnicate", "unknown command 'frobnicate'");
  expect_one_line_error("summary", "missing MODEL");
  expect_one_line_error("summary no-such-model", "no-such-model");
  expect_one_line_error("summary fmnist-cnn extra", "unexpected argument 'extra'");
  expect_one_line_error("train", "missing MODEL");
  expect_one_line_error("train no-such-model", "no-such-model");
  expect_one_line_error("train fmnist-cnn --epochs", "--epochs needs a value");
  expect_one_line_error("train fmnist-cnn --epochs abc", "--epochs expects an integer, got 'abc'");
  expect_one_line_error("train fmnist-cnn --epochs 0", "--epochs must be >= 1");
  expect_one_line_error("train fmnist-cnn --batch -3", "--batch must be >= 1");
  expect_one_line_error("train fmnist-cnn --lr 0", "--lr must be > 0");
  expect_one_line_error("train fmnist-cnn --lr x1", "--lr expects a number");
  expect_one_line_error("train fmnist-cnn --bogus 1", "unknown option '--bogus'");
  expect_one_line_error("train fmnist-cnn -e 1", "unknown option '-e'");
  expect_one_line_error("train fmnist-cnn --epochs 1 --epochs 2", "--epochs given twice");
  expect_one_line_error("train fmnist-cnn --json=yes", "--json takes no value");
  expect_one_line_error("train fmnist-cnn --data imagenet", "unknown data set 'imagenet'");
  expect_one_line_error("train fmnist-cnn --data cifar10", "needs a directory");
  expect_one_line_error("train fmnist-cnn --data folder:/no/such/dir", "'/no/such/dir' is not a directory");
  expect_one_line_error("train fmnist-cnn --device tpu", "unknown device 'tpu'");
  expect_one_line_error("train fmnist-cnn --device cuda:7", "cuda:7");
  expect_one_line_error("train fmnist-cnn --algo magic", "unknown algorithm 'magic'");
  expect_one_line_error("train fmnist-cnn --optimizer lbfgs", "unknown optimizer 'lbfgs'");
  expect_one_line_error("train fmnist-cnn --schedule linear", "--schedule must be");
  expect_one_line_error("eval", "missing CHECKPOINT");
  expect_one_line_error("train fmnist-cnn --limit 10 --out /proc/no/such/dir",
                        "cannot create the --out directory '/proc/no/such/dir'");
  expect_one_line_error("eval /no/such.ckpt --data fashion-mnist", "/no/such.ckpt");
  expect_one_line_error("predict /no/such.ckpt", "missing CHECKPOINT IMAGE");
  expect_one_line_error("predict /no/such.ckpt a.png", "/no/such.ckpt");
  expect_one_line_error("bench", "missing what to benchmark");
  expect_one_line_error("bench infer fmnist-cnn", "unknown benchmark 'infer'");
  expect_one_line_error("bench train fmnist-cnn --steps 0", "--steps must be >= 1");
  expect_one_line_error("bench train fmnist-cnn --float32-precision mediun",
                        "--float32-precision: unknown precision 'mediun' (expected highest, high or medium)");
  expect_one_line_error("train fmnist-cnn --float32-precision low", "--float32-precision: unknown precision 'low'");
}

// --float32-precision reaches the run and its JSON record; the default is
// the environment's (highest when unset).
TEST(Cli, BenchTrainRecordsItsFloat32Precision) {
  for (const char* precision : {"high", "medium"}) {
    const CommandResult r = convkit(std::string("bench train fmnist-cnn --device sim --batch 2 --steps 1 --warmup 0 "
                                                "--float32-precision ") + precision + " --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(string_of(json::parse(r.last_line(), "bench output"), "float32_precision"), precision);
  }
  if (std::getenv("CONVKIT_FLOAT32_PRECISION") == nullptr && std::getenv("CONVKIT_ALLOW_TF32") == nullptr) {
    const CommandResult r = convkit("bench train fmnist-cnn --batch 2 --steps 1 --warmup 0 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(string_of(json::parse(r.last_line(), "bench output"), "float32_precision"), "highest");
  }
}

TEST(Cli, CorruptCheckpointIsAnError) {
  TempDir dir;
  write_bytes(dir.file("bad.ckpt"), Bytes{'n', 'o', 't', ' ', 'a', ' ', 'c', 'k', 'p', 't'});
  expect_one_line_error("eval " + shell_quote(dir.file("bad.ckpt")) + " --data fashion-mnist",
                        "bad.ckpt");
}

TEST(Cli, SummaryOfFmnistCnn) {
  const CommandResult r = convkit("summary fmnist-cnn");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* part : {"fmnist-cnn", "0 (Conv2d)", "[-1, 32, 28, 28]", "10 (Linear)",
                           "[-1, 10]", "Total params: 421,642", "Trainable params: 421,642",
                           "Non-trainable params: 0"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << " missing from\n" << r.out;
}

// Loader workers are threads: a request far beyond the machine is capped, and said so.
TEST(Cli, WorkersAreCappedWithAWarning) {
  TempDir dir;
  write_fashion_mnist_like(dir.file("fm"), 16, 8);
  const CommandResult r = convkit("train fmnist-cnn --data fashion-mnist:" + shell_quote(dir.file("fm")) +
                                  " --epochs 1 --batch 8 --progress none --workers 100000");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("--workers 100000 is more than twice the"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("100000 workers"), std::string::npos) << r.out;
}

TEST(Cli, BenchTrainReportsThroughput) {
  const CommandResult r = convkit("bench train fmnist-cnn --device cpu --batch 8 --steps 2 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json::Value v = json::parse(r.last_line(), "bench output");
  EXPECT_EQ(string_of(v, "model"), "fmnist-cnn");
  EXPECT_EQ(string_of(v, "device"), "cpu");
  EXPECT_EQ(number(v, "batch"), 8);
  EXPECT_EQ(number(v, "steps"), 2);
  EXPECT_GT(number(v, "images_per_sec"), 0);
  EXPECT_NE(r.out.find("images/s"), std::string::npos);
  EXPECT_EQ(r.out.find("median"), std::string::npos);  // one run: no range to give
}

// --profile: the layer table of as many more steps, after the throughput line
// and before the JSON, which stays the last line.
TEST(Cli, BenchProfilePrintsTheLayerTableBeforeTheJson) {
  const CommandResult r = convkit("bench train fmnist-cnn --batch 4 --steps 2 --warmup 0 --profile --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::size_t throughput = r.out.find("images/s");
  const std::size_t table = r.out.find("profile: 2 steps, 8 images");
  ASSERT_NE(table, std::string::npos) << r.out;
  EXPECT_LT(throughput, table);
  for (const char* row : {"Conv2d", "Linear", "optimizer", "by layer type:"})
    EXPECT_NE(r.out.find(row, table), std::string::npos) << row << "\n" << r.out;
  EXPECT_EQ(number(json::parse(r.last_line(), "bench output"), "steps"), 2);
}

// --repeat N: N timed runs, the median with min and max, and the record of
// what ran where.
TEST(Cli, BenchRepeatReportsTheMedianAndTheHost) {
  const CommandResult r = convkit("bench train fmnist-cnn --batch 4 --steps 1 --warmup 0 --repeat 3 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("images/s (median of 3 runs; min "), std::string::npos) << r.out;
  const json::Value v = json::parse(r.last_line(), "bench output");
  EXPECT_EQ(number(v, "repeat"), 3);
  const json::Value* runs = v.find("runs_images_per_sec");
  ASSERT_NE(runs, nullptr);
  ASSERT_EQ(runs->items.size(), 3u);
  std::vector<double> ips;
  for (const json::Value& run : runs->items) ips.push_back(std::stod(run.text));
  std::sort(ips.begin(), ips.end());
  EXPECT_EQ(number(v, "images_per_sec"), ips[1]);
  EXPECT_EQ(number(v, "images_per_sec_min"), ips[0]);
  EXPECT_EQ(number(v, "images_per_sec_max"), ips[2]);
  EXPECT_EQ(string_of(v, "host"), cpu_model());
  EXPECT_EQ(string_of(v, "compiled_isa"), compiled_isa());
  // The cpu's run-time kernel path (docs/cpu-isa.md), as `convkit devices` prints it.
  EXPECT_NE(string_of(v, "device_detail").find("kernels "), std::string::npos) << string_of(v, "device_detail");
  EXPECT_GE(number(v, "threads"), 1);
  EXPECT_EQ(string_of(v, "version"), CONVKIT_VERSION_STRING);
  const std::string commit = string_of(v, "commit");
  EXPECT_TRUE(commit == "unknown" || commit.size() >= 12) << commit;
  expect_one_line_error("bench train fmnist-cnn --repeat 0", "--repeat");
}

// Without a launcher the group is one rank: nothing to communicate, but the
// sums are still checked and every size reported.
TEST(Cli, BenchAllreduceRunsOnOneRank) {
  const CommandResult r = convkit("bench allreduce --min-bytes 16 --max-bytes 100");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1 rank, single group"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("start it with mpirun -np N"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n         100 "), std::string::npos) << r.out;  // the last size is --max-bytes
  expect_one_line_error("bench allreduce --min-bytes 6", "must be multiples of 4");
  expect_one_line_error("bench allreduce --min-bytes 64 --max-bytes 8", "--min-bytes 64 is above --max-bytes 8");
  expect_one_line_error("bench allreduce extra", "unexpected argument 'extra' (expected only options");
}

// One flow on a generated IDX data set: train with --json and --out, then
// summary, eval and predict from the checkpoint it wrote.
TEST(Cli, TrainEvalPredictOnGeneratedIdx) {
  TempDir dir;
  const std::string data = dir.file("fmnist");
  write_fashion_mnist_like(data, 320, 100);
  const std::string out = dir.file("run");
  const CommandResult train =
      convkit("train fmnist-cnn --data fashion-mnist:" + shell_quote(data) +
              " --epochs 2 --batch 32 --workers 2 --json --profile --out " + shell_quote(out));
  ASSERT_EQ(train.status, 0) << train.err << train.out;
  // Not a terminal: one progress line per epoch, no carriage returns.
  EXPECT_EQ(train.out.find('\r'), std::string::npos);
  EXPECT_NE(train.out.find("Epoch 2/2\n10/10 [==============================]"), std::string::npos)
      << train.out;
  EXPECT_NE(train.out.find("by layer type:"), std::string::npos);  // --profile

  const json::Value v = json::parse(train.last_line(), "train output");
  EXPECT_EQ(string_of(v, "model"), "fmnist-cnn");
  EXPECT_EQ(string_of(v, "device"), "cpu");
  EXPECT_EQ(string_of(v, "algo"), "automatic");
  EXPECT_EQ(number(v, "epochs"), 2);
  EXPECT_EQ(number(v, "batch"), 32);
  EXPECT_EQ(number(v, "train_images"), 320);
  EXPECT_EQ(number(v, "test_images"), 100);
  EXPECT_GT(number(v, "train_images_per_sec"), 0);
  EXPECT_GT(number(v, "seconds"), 0);
  const double accuracy = number(v, "test_accuracy");
  EXPECT_GE(accuracy, 0.0);
  EXPECT_LE(accuracy, 1.0);
  EXPECT_GT(number(v, "test_loss"), 0);
  const json::Value* history = v.find("history");
  ASSERT_NE(history, nullptr);
  ASSERT_EQ(history->items.size(), 2u);
  EXPECT_EQ(number(history->items[1], "epoch"), 2);
  EXPECT_EQ(number(history->items[1], "lr"), 0.0005);  // cosine over 2 epochs: half way

  for (const char* f : {"last.ckpt", "best.ckpt", "log.csv", "log.jsonl", "profile.txt"})
    EXPECT_TRUE(std::filesystem::exists(out + "/" + f)) << f;

  const std::string ckpt = shell_quote(out + "/last.ckpt");
  const CommandResult summary = convkit("summary " + ckpt);
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find("Total params: 421,642"), std::string::npos) << summary.out;

  // eval of the final checkpoint reproduces train's test figures.
  const CommandResult eval = convkit("eval " + ckpt + " --json");  // data from the checkpoint
  ASSERT_EQ(eval.status, 0) << eval.err;
  const json::Value e = json::parse(eval.last_line(), "eval output");
  EXPECT_EQ(number(e, "test_images"), 100);
  EXPECT_NEAR(number(e, "test_accuracy"), accuracy, 1e-9);
  EXPECT_NEAR(number(e, "test_loss"), number(v, "test_loss"), 1e-6);

  // predict on a PNG (RGB, 40x40): the stored preprocessing converts it to
  // 28x28 gray in [0, 1].
  const auto px = class_image(3, 10, 40, 40, 3, 99);
  write_bytes(dir.file("x.png"), png_bytes(40, 40, 3, px));
  const CommandResult predict = convkit("predict " + ckpt + " " + shell_quote(dir.file("x.png")) + " --json");
  ASSERT_EQ(predict.status, 0) << predict.err;
  const json::Value pj = json::parse(predict.last_line(), "predict output");
  const json::Value* preds = pj.find("predictions");
  ASSERT_NE(preds, nullptr);
  ASSERT_EQ(preds->items.size(), 1u);
  const json::Value* probs = preds->items[0].find("probabilities");
  ASSERT_NE(probs, nullptr);
  ASSERT_EQ(probs->members.size(), 10u);
  double total = 0;
  for (const auto& [name, p] : probs->members) total += std::stod(p.text);
  EXPECT_NEAR(total, 1.0, 1e-4);

  expect_one_line_error("predict " + ckpt + " " + shell_quote(dir.file("missing.png")), "missing.png");
  write_bytes(dir.file("broken.png"), Bytes{0x89, 'P', 'N', 'G', 1, 2, 3});
  expect_one_line_error("predict " + ckpt + " " + shell_quote(dir.file("broken.png")), "broken.png");
  // A binary model cannot train on ten classes.
  expect_one_line_error("train catdog-cnn --data fashion-mnist:" + shell_quote(data),
                        "binary classifier");
}

// An image folder without train/test subfolders is split 80/20 by the seed;
// eval finds the same test split through the seed stored in the checkpoint.
TEST(Cli, TrainAndEvalOnAnImageFolder) {
  TempDir dir;
  write_image_folder(dir.file("pets"), {"cats", "dogs"}, 10, 50, 60);
  const std::string out = dir.file("run");
  const CommandResult train =
      convkit("train catdog-cnn --data folder:" + shell_quote(dir.file("pets")) +
              " --epochs 1 --batch 4 --augment --seed 5 --json --out " + shell_quote(out));
  ASSERT_EQ(train.status, 0) << train.err << train.out;
  EXPECT_NE(train.out.find("16 train / 4 test images, 2 classes, augmented"), std::string::npos)
      << train.out;
  const json::Value v = json::parse(train.last_line(), "train output");
  EXPECT_EQ(number(v, "train_images"), 16);
  EXPECT_EQ(number(v, "test_images"), 4);
  EXPECT_TRUE(v.find("augment")->boolean);

  const CommandResult eval = convkit("eval " + shell_quote(out + "/last.ckpt") + " --json");
  ASSERT_EQ(eval.status, 0) << eval.err;
  const json::Value e = json::parse(eval.last_line(), "eval output");
  EXPECT_EQ(number(e, "test_images"), 4);
  EXPECT_NEAR(number(e, "test_accuracy"), number(v, "test_accuracy"), 1e-9);

  const CommandResult predict = convkit("predict " + shell_quote(out + "/last.ckpt") + " " +
                                        shell_quote(dir.file("pets/dogs/img1.jpg")) + " --top 1");
  ASSERT_EQ(predict.status, 0) << predict.err;
  EXPECT_EQ(count_lines(predict.out), 2) << predict.out;  // the verdict and one class
  EXPECT_TRUE(predict.out.find(": cats (") != std::string::npos ||
              predict.out.find(": dogs (") != std::string::npos)
      << predict.out;
}

// inspect lists what a checkpoint holds (text and --json); export writes its
// weights as safetensors, bit for bit, under the state_dict names.
TEST(Cli, InspectAndExportACheckpoint) {
  TempDir dir;
  write_fashion_mnist_like(dir.file("fm"), 32, 16);
  const std::string out = dir.file("run");
  ASSERT_EQ(convkit("train fmnist-cnn --data fashion-mnist:" + shell_quote(dir.file("fm")) +
                    " --epochs 1 --batch 8 --progress none --out " + shell_quote(out))
                .status,
            0);
  const std::string path = out + "/best.ckpt";
  const io::Checkpoint ck = io::load_checkpoint(path);

  const CommandResult text = convkit("inspect " + shell_quote(path));
  ASSERT_EQ(text.status, 0) << text.err;
  for (const std::string& part : {"model          " + ck.model_spec, std::string("weights        421642 values in 8 tensors"),
                                 std::string("preprocessing  channels=1, resize=28x28"),
                                 std::string("classes        10: T-shirt/top, Trouser"),
                                 std::string("optimizer      Adam(lr=0.001"), std::string("progress       1 epochs done, step 0"),
                                 "val_accuracy " + *ck.get_metadata("logs.val_accuracy"),
                                 std::string("metadata       zoo = fmnist-cnn")})
    EXPECT_NE(text.out.find(part), std::string::npos) << "lacks '" << part << "' in\n" << text.out;

  const CommandResult js = convkit("inspect --json " + shell_quote(path));
  ASSERT_EQ(js.status, 0) << js.err;
  const json::Value v = json::parse(js.last_line(), "inspect output");
  EXPECT_EQ(string_of(v, "model_spec"), ck.model_spec);
  EXPECT_EQ(number(v, "parameters"), 421642);
  EXPECT_EQ(number(v, "epoch"), 1);
  EXPECT_EQ(v.find("classes")->items.size(), 10u);
  EXPECT_EQ(number(*v.find("metrics"), "val_accuracy"), std::stod(*ck.get_metadata("logs.val_accuracy")));
  EXPECT_EQ(string_of(*v.find("metadata"), "monitor"), "val_accuracy");

  const std::string st = dir.file("weights.safetensors");
  const CommandResult exported = convkit("export " + shell_quote(path) + " --safetensors " + shell_quote(st));
  ASSERT_EQ(exported.status, 0) << exported.err;
  const io::SafetensorsFile file = io::load_safetensors(st);
  ASSERT_EQ(file.tensors.size(), ck.model_state.size());
  for (std::size_t i = 0; i < file.tensors.size(); ++i) {
    EXPECT_EQ(file.tensors[i].first, ck.model_state[i].first);
    EXPECT_EQ(file.tensors[i].second.shape(), ck.model_state[i].second.shape());
    EXPECT_EQ(file.tensors[i].second.to_vector<float>(), ck.model_state[i].second.to_vector<float>());
  }
  EXPECT_EQ(file.metadata.at("format"), "pt");
  EXPECT_EQ(file.metadata.at("convkit_model_spec"), ck.model_spec);
  expect_one_line_error("export " + shell_quote(path), "--safetensors OUT is required");
  expect_one_line_error("inspect " + shell_quote(dir.file("none.ckpt")), "none.ckpt");
}

// A model scores its own classes by index: eval on data whose class names
// differ is refused (it would report an accuracy against the wrong labels),
// unless --class-map says which class is which.
TEST(Cli, EvalRefusesDataWhoseClassesDifferUnlessMapped) {
  TempDir dir;
  write_image_folder(dir.file("pets"), {"cats", "dogs"}, 10, 50, 60);
  write_image_folder(dir.file("ab"), {"a", "b"}, 10, 50, 60);  // the same images, renamed classes
  const std::string out = dir.file("run");
  const std::string ckpt = shell_quote(out + "/last.ckpt");
  ASSERT_EQ(convkit("train catdog-cnn --data folder:" + shell_quote(dir.file("pets")) +
                    " --epochs 1 --batch 4 --seed 5 --progress none --out " + shell_quote(out))
                .status,
            0);
  const auto accuracy = [&](const std::string& args) {
    const CommandResult r = convkit("eval " + ckpt + " --json " + args);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? number(json::parse(r.last_line(), "eval output"), "test_accuracy") : -1.0;
  };
  const double own = accuracy("");
  const std::string ab = "--data folder:" + shell_quote(dir.file("ab"));
  expect_one_line_error("eval " + ckpt + " " + ab, "the data's class 'a' is not a class of checkpoint");
  expect_one_line_error("eval " + ckpt + " " + ab, "(cats, dogs), the data has (a, b)");
  EXPECT_NEAR(accuracy(ab + " --class-map a=cats,b=dogs"), own, 1e-9);
  // Swapped, every label is the other class.
  EXPECT_NEAR(accuracy(ab + " --class-map a=dogs,b=cats"), 1.0 - own, 1e-9);
  expect_one_line_error("eval " + ckpt + " " + ab + " --class-map a=cats", "the data's class 'b'");
  expect_one_line_error("eval " + ckpt + " " + ab + " --class-map a=cats,c=dogs", "'c' is not a class of the data");
  expect_one_line_error("eval " + ckpt + " " + ab + " --class-map a", "is not DATA_CLASS=CHECKPOINT_CLASS");
}

}  // namespace
}  // namespace convkit::testing
