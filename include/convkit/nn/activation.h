#pragma once
// Activation modules: stateless wrappers over the functional ops, so that
// activations can sit in a Sequential and show up in the module tree.
#include <cstdint>

#include "convkit/nn/module.h"

namespace convkit::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override;
  std::string spec() const override;
};

// max(0, x) + negative_slope * min(0, x).
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string spec() const override;
  double negative_slope() const { return negative_slope_; }

 private:
  double negative_slope_;
};

// x for x > 0, alpha * (exp(x) - 1) otherwise.
class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string spec() const override;
  double alpha() const { return alpha_; }

 private:
  double alpha_;
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override;
  std::string spec() const override;
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override;
  std::string spec() const override;
};

// x * sigmoid(x), also called swish.
class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& x) override;
  std::string spec() const override;
};

// Softmax along `dim` (PyTorch requires the dim; so do we).
class Softmax : public Module {
 public:
  explicit Softmax(std::int64_t dim);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string spec() const override;
  std::int64_t dim() const { return dim_; }

 private:
  std::int64_t dim_;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(std::int64_t dim);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string spec() const override;
  std::int64_t dim() const { return dim_; }

 private:
  std::int64_t dim_;
};

}  // namespace convkit::nn
