#pragma once
// The small models and data the data-parallel tests train: a conv net with
// an optional BatchNorm, on a fixed random batch per step.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <convkit/convkit.h>

namespace convkit::testing {

// conv(2 -> 4, 3x3, same) [-> BatchNorm2d(4)] -> ReLU -> flatten -> linear(100 -> 3),
// its weights drawn from `seed`.
std::shared_ptr<nn::Sequential> small_conv_net(std::uint64_t seed, bool batchnorm);

struct Batch {
  Tensor x;  // [B, 2, 5, 5]
  Tensor y;  // int64 [B], in [0, 3)
};
// `steps` batches of `batch` samples, from a fixed seed. Free of gtest, so
// the MPI check program (ddp_mpi_check.cpp) shares them.
std::vector<Batch> training_batches(int steps, std::int64_t batch);
// Rank r's part of a global batch: samples r, r + size, r + 2 size, ...
Batch shard(const Batch& global, int rank, int size);

// `model` after SGD with momentum on `batches` (through `forward`, which
// may be a DistributedDataParallel wrapping it).
void train_sgd(nn::Module& forward, const std::vector<Batch>& batches);

// max |a - b| over every parameter and buffer of two models of the same
// type; throws when their state dicts name different tensors.
double max_state_difference(const nn::Module& a, const nn::Module& b);

// Records the nodes backward runs, as "node NAME", into a log that a test
// interleaves with the collectives it records, to see when each went out.
class LoggingObserver : public autograd::BackwardObserver {
 public:
  explicit LoggingObserver(std::vector<std::string>& log) : log_(log) {}
  void before_node(const autograd::Node& node) override { log_.push_back("node " + node.name()); }
  void after_node(const autograd::Node&) override {}

 private:
  std::vector<std::string>& log_;
};

}  // namespace convkit::testing
