// Whole system on real data: the zoo's fmnist-cnn trains for one epoch on
// 2,000 Fashion-MNIST training images (the data layer, preprocessing, conv
// algorithms, autograd, Adam and fit together) and is evaluated on 1,000
// test images.
//
// Threshold: 60% test accuracy. Chance is 10%, and a pipeline with a broken
// piece (wrong labels, no gradient through a layer, a missing 1/255, a bad
// update rule) stays far below; measured with this setup the run reaches
// about 70% (seeds 1..5 all within 67-73%), so 60% leaves room for
// floating-point differences between machines while still failing on any
// real defect. Skipped, with the reason, when the data set is not installed.
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
  EXPECT_GE(test.accuracy, 0.60);
  EXPECT_LT(test.loss, h.epochs.front().at("loss") * 1.5);
}

}  // namespace
}  // namespace convkit
