#pragma once
#include "convkit/backend/backend.h"

namespace convkit::cpu {

// OpenMP + Eigen. Host memory is 64-byte aligned.
class CpuBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::cpu; }
  BackendInfo info() const override;

  void* allocate(std::size_t nbytes) override;
  void deallocate(void* ptr, std::size_t nbytes) override;
  void copy_from_host(void* dst, const void* src, std::size_t nbytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t nbytes) override;
  void synchronize() override {}

  void fill(const Tensor& out, double value) override;
  void unary(UnaryOp op, const Tensor& x, const Tensor& out, double a, double b) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void reduce(ReduceOp op, const Tensor& x, const Tensor& out) override;
  void argmax(const Tensor& x, std::int64_t dim, const Tensor& out) override;
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void arange(const Tensor& out, double start, double step) override;
  void uniform(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double lo,
               double hi) override;
  void normal(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double mean,
              double std) override;
};

CpuBackend& cpu_backend();

}  // namespace convkit::cpu
