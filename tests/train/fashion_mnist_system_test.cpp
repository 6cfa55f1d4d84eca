// Whole system on real data: the zoo's fmnist-cnn trains for one epoch on
// 2,000 Fashion-MNIST training images (the data layer, preprocessing, conv
// algorithms, autograd, Adam and fit together) and is evaluated on 1,000
// test images.
//
// Threshold: 50% test accuracy, five times chance (10%). Measured with this
// exact setup (seed 1) the run reaches 69.9%; with seeds 1..5 (other subsets,
// initial weights and shuffles) 69.9, 72.6, 62.3, 68.7 and 69.6%. So 50% sits
// 12 points below the worst seed, room for the floating-point differences
// between machines and thread counts, while a pipeline with a broken piece
// (labels out of step with images, no gradient through a layer, a wrong
// update rule) stays near chance and fails. Skipped, with the reason, when
// the data set is not installed.
#include <filesystem>

#include "support/support.h"

namespace convkit {
namespace {

TEST(FashionMNISTSystem, FmnistCnnLearnsFromTwoThousandImagesInOneEpoch) {
  const std::string root = data::kFashionMNISTDefaultRoot;
  if (!std::filesystem::exists(root + "/train-images-idx3-ubyte.gz") &&
      !std::filesystem::exists(root + "/train-images-idx3-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST is not installed at " << root
                 << " (Debian package dataset-fashion-mnist)";

  manual_seed(1);
  auto train_all = std::make_shared<data::FashionMNIST>(root, data::Split::train);
  auto test_all = std::make_shared<data::FashionMNIST>(root, data::Split::test);
  auto subset = [](std::shared_ptr<const data::Dataset> d, std::int64_t n, std::uint64_t seed) {
    auto order = data::epoch_order(d->size(), true, seed, 0);
    order.resize(static_cast<std::size_t>(n));
    return std::make_shared<data::Subset>(std::move(d), std::move(order));
  };
  const auto pre = data::Preprocessing::identity().rescale(1.0 / 255);
  data::DataLoaderOptions o;
  o.batch_size = 32;
  o.seed = 1;
  o.preprocessing = pre;
  data::DataLoader train_loader(subset(train_all, 2000, 1), o);
  o.batch_size = 250;
  o.shuffle = false;
  data::DataLoader test_loader(subset(test_all, 1000, 2), o);

  auto model = models::create("fmnist-cnn");
  optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));
  train::FitOptions fo;
  fo.epochs = 1;
  fo.device = kCPU;
  fo.progress = train::ProgressMode::none;
  const train::History h = train::fit(*model, opt, train_loader, fo);
  const train::EvalResult test = train::evaluate(*model, test_loader);
  std::printf("fmnist-cnn, 2000 images, 1 epoch: train loss %.4f, test loss %.4f, test accuracy %.4f\n",
              h.last().at("loss"), test.loss, test.accuracy);
  EXPECT_EQ(test.examples, 1000);
  EXPECT_GE(test.accuracy, 0.50);
  EXPECT_LT(test.loss, h.epochs.front().at("loss") * 1.5);
}

}  // namespace
}  // namespace convkit
