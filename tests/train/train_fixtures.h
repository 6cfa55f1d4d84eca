#pragma once
// Small in-memory problems for the training tests: images whose class is the
// quadrant of a bright block, and a small CNN that learns them in a few epochs.
#include <memory>
#include <random>

#include "data/data_files.h"
#include "support/support.h"

namespace convkit::testing {

// n raw images [n, 1, 8, 8] (0..255) of `classes` <= 4 classes: class k has a
// bright 3x3 block in quadrant k on dim noise.
inline std::shared_ptr<data::TensorDataset> quadrant_dataset(std::int64_t n, std::int64_t classes,
                                                             std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> px(static_cast<std::size_t>(n * 64));
  std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t k = i % classes;
    labels[static_cast<std::size_t>(i)] = k;
    float* img = px.data() + i * 64;
    for (int j = 0; j < 64; ++j) img[j] = static_cast<float>(rng() % 40);
    const int top = (k / 2) * 4 + static_cast<int>(rng() % 2), left = (k % 2) * 4 + static_cast<int>(rng() % 2);
    for (int y = top; y < top + 3; ++y)
      for (int x = left; x < left + 3; ++x) img[y * 8 + x] = static_cast<float>(200 + rng() % 55);
  }
  return std::make_shared<data::TensorDataset>(from_vector(px, {n, 1, 8, 8}),
                                               from_vector(labels, {n}, DType::int64), classes);
}

// conv 3x3 (4 channels) + ReLU + max pool 2 + linear to `outputs`.
inline std::shared_ptr<nn::Sequential> small_cnn(std::int64_t outputs) {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3).padding(1)));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(4 * 4 * 4, outputs));
  return net;
}

inline data::Preprocessing unit_scale() { return data::Preprocessing::identity().rescale(1.0 / 255); }

inline data::DataLoaderOptions loader_options(std::int64_t batch, bool shuffle = true) {
  data::DataLoaderOptions o;
  o.batch_size = batch;
  o.shuffle = shuffle;
  o.seed = 3;
  o.preprocessing = unit_scale();
  return o;
}

// Silent fit options.
inline train::FitOptions quiet(std::int64_t epochs) {
  train::FitOptions o;
  o.epochs = epochs;
  o.progress = train::ProgressMode::none;
  return o;
}

}  // namespace convkit::testing
