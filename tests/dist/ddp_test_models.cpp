#include "ddp_test_models.h"

#include <algorithm>

namespace convkit::testing {

std::shared_ptr<nn::Sequential> small_conv_net(std::uint64_t seed, bool batchnorm) {
  manual_seed(seed);
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 4, 3).padding(1)));
  if (batchnorm) net->push_back(std::make_shared<nn::BatchNorm2d>(4));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(4 * 5 * 5, 3));
  return net;
}

std::vector<Batch> training_batches(int steps, std::int64_t batch) {
  manual_seed(20261127);
  std::vector<Batch> out;
  for (int s = 0; s < steps; ++s) {
    Tensor x = randn({batch, 2, 5, 5});
    // Labels a simple function of the input, so the steps move the weights.
    Tensor y = argmax(sum(x, {2, 3}).narrow(1, 0, 2), 1);
    out.push_back({x, y});
  }
  return out;
}

Batch shard(const Batch& global, int rank, int size) {
  const std::int64_t n = global.x.size(0);
  return {global.x.slice(0, rank, n, size).contiguous(), global.y.slice(0, rank, n, size).contiguous()};
}

void train_sgd(nn::Module& forward, const std::vector<Batch>& batches) {
  optim::SGD opt(forward.parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (const Batch& b : batches) {
    opt.zero_grad();
    cross_entropy(forward(b.x), b.y).backward();
    opt.step();
  }
}

double max_state_difference(const nn::Module& a, const nn::Module& b) {
  const StateDict sa = a.state_dict(), sb = b.state_dict();
  CK_CHECK(sa.size() == sb.size(), "max_state_difference: ", sa.size(), " tensors against ", sb.size());
  double worst = 0;
  for (std::size_t i = 0; i < sa.size(); ++i) {
    CK_CHECK(sa[i].first == sb[i].first, "max_state_difference: ", sa[i].first, " against ", sb[i].first);
    const Tensor d = (sa[i].second.to(DType::float64) - sb[i].second.to(DType::float64)).abs();
    if (d.numel() > 0) worst = std::max(worst, max(d).item());
  }
  return worst;
}

}  // namespace convkit::testing
