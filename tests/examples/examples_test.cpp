// Each example program, run as a user would, on generated data small enough
// to finish in seconds: it must exit 0 and print what its tutorial promises.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "data/data_files.h"
#include "generated_data.h"

namespace convkit::testing {
namespace {

CommandResult run(const char* program, const std::string& args) {
  return run_command(shell_quote(program) + " " + args);
}

void expect_mentions(const CommandResult& r, const std::vector<std::string>& parts) {
  for (const std::string& p : parts)
    EXPECT_NE(r.out.find(p), std::string::npos) << "'" << p << "' missing from\n" << r.out;
}

TEST(Examples, FashionMnist) {
  TempDir dir;
  write_fashion_mnist_like(dir.file("data"), 200, 100);
  const CommandResult r = run(EXAMPLE_FASHION_MNIST, "--data " + shell_quote(dir.file("data")) +
                                                         " --epochs 1 --limit 160 --test-limit 60 "
                                                         "--batch 32 --out " + shell_quote(dir.file("out")));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  expect_mentions(r, {"Total params: 421,642", "Epoch 1/1", "test loss", "on 60 images",
                      "test image 0: predicted", "test image 4: predicted"});
  for (const char* f : {"last.ckpt", "best.ckpt", "log.csv"})
    EXPECT_TRUE(std::filesystem::exists(dir.file("out/") + f)) << f;
  EXPECT_EQ(run(EXAMPLE_FASHION_MNIST, "--epochs").status, 2);
  const CommandResult missing = run(EXAMPLE_FASHION_MNIST, "--data " + shell_quote(dir.file("none")));
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("none"), std::string::npos) << missing.err;
}

TEST(Examples, Cifar10Cnn) {
  TempDir dir;
  write_cifar10_like(dir.file("cifar"), 16, 32);
  const CommandResult r = run(EXAMPLE_CIFAR10_CNN, "--data " + shell_quote(dir.file("cifar")) +
                                                       " --epochs 1 --limit 48 --batch 16 --algo im2col_gemm"
                                                       " --profile 1 --out " + shell_quote(dir.file("out")));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  expect_mentions(r, {"CIFAR-10: 48 training and 32 test images", "Epoch 1/1", "test accuracy",
                      "by layer type:", "Conv2d"});
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/best.ckpt")));
  EXPECT_EQ(run(EXAMPLE_CIFAR10_CNN, "").status, 2);  // --data is required
}

TEST(Examples, CatDogImageFolderWithAugmentation) {
  TempDir dir;
  write_image_folder(dir.file("pets/train"), {"cats", "dogs"}, 8, 48, 40, 1);
  write_image_folder(dir.file("pets/validation"), {"cats", "dogs"}, 4, 48, 40, 2);
  const std::string image = dir.file("pets/validation/dogs/img0.png");
  const CommandResult r = run(EXAMPLE_CATDOG, "--data " + shell_quote(dir.file("pets")) +
                                                  " --epochs 1 --batch 4 --out " + shell_quote(dir.file("out")) +
                                                  " --predict " + shell_quote(image));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  expect_mentions(r, {"16 training and 8 validation images, classes: cats dogs", "Epoch 1/1",
                      "validation accuracy"});
  // "<image>: cats p, dogs q" with p + q = 1.
  const std::size_t at = r.out.find(image + ": cats ");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::istringstream line(r.out.substr(at + image.size() + 7));
  double p = -1, q = -1;
  std::string dogs;
  line >> p;
  line.ignore(1);  // ','
  line >> dogs >> q;
  EXPECT_EQ(dogs, "dogs");
  EXPECT_NEAR(p + q, 1.0, 1e-4);
  EXPECT_GE(p, 0.0);
  EXPECT_GE(q, 0.0);
}

TEST(Examples, CustomLayer) {
  TempDir dir;
  write_fashion_mnist_like(dir.file("data"), 200, 10);
  const CommandResult r = run(EXAMPLE_CUSTOM_LAYER, "--data " + shell_quote(dir.file("data")) +
                                                        " --limit 128 --epochs 1 --out " + shell_quote(dir.file("out")));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  expect_mentions(r, {"gradcheck of swish: ok", "Swish", "by layer type:",
                      "rebuilt from the checkpoint's spec: Sequential(", "Swish()",
                      "largest difference between their probabilities: 0"});
}

// docs/nn.md's saving and loading, run: a state dict, a checkpoint and a
// safetensors file each give back a model that predicts bit for bit alike.
TEST(Examples, SaveLoad) {
  TempDir dir;
  const CommandResult r = run(EXAMPLE_SAVE_LOAD, "--out " + shell_quote(dir.file("out")));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  expect_mentions(r, {"1. state dict: 4 tensors, largest difference 0",
                      "2. checkpoint: Sequential(Conv2d(1, 8, 3)", "largest difference 0",
                      "3. safetensors: 4 tensors, largest difference 0",
                      "every copy predicts exactly what the original does"});
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/model.ckpt")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/model.safetensors")));
}

}  // namespace
}  // namespace convkit::testing
