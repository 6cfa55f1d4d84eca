#pragma once
// Small generated data sets in the on-disk formats the readers take, for
// tests that run the convkit tool and the examples end to end. The images
// are learnable: class k is a bright square at a position of its own on
// dim noise, so a few training steps already beat chance.
#include <cstdint>
#include <string>
#include <vector>

#include "support/command.h"  // run_command, used with these data sets

namespace convkit::testing {

// Raw pixels of one image of class `label` (interleaved channels, 0..255).
std::vector<std::uint8_t> class_image(std::int64_t label, std::int64_t classes, int height,
                                      int width, int channels, std::uint64_t seed);

// {train,t10k}-{images-idx3,labels-idx1}-ubyte in `dir`: 28x28 gray, 10
// classes, as FashionMNIST(dir, split) reads them.
void write_fashion_mnist_like(const std::string& dir, int train_count, int test_count,
                              std::uint64_t seed = 1);

// data_batch_1.bin .. data_batch_5.bin (per_batch records each) and
// test_batch.bin in `dir`: CIFAR-10 binary records, 32x32 RGB, 10 classes.
void write_cifar10_like(const std::string& dir, int per_batch, int test_count,
                        std::uint64_t seed = 1);

// `root`/<class>/img<i>.png|jpg for each class name, per_class images of
// height x width, PNG and JPEG alternating.
void write_image_folder(const std::string& root, const std::vector<std::string>& classes,
                        int per_class, int height, int width, std::uint64_t seed = 1);

}  // namespace convkit::testing
