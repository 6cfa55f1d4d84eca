#pragma once
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace convkit {

// Sizes of a tensor's dimensions, outermost first (NCHW for images).
class Shape {
 public:
  // The largest product of a shape's non-zero dimensions (and so the largest
  // element count and stride): 2^62, far past any memory, and small enough
  // that element offsets and strides stay within int64.
  static constexpr std::int64_t kMaxShapeProduct = std::int64_t{1} << 62;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

  std::int64_t rank() const { return static_cast<std::int64_t>(dims_.size()); }
  std::size_t size() const { return dims_.size(); }
  bool empty() const { return dims_.empty(); }
  // The product of the dimensions. Throws Error naming the shape when the
  // product of its non-zero dimensions exceeds kMaxShapeProduct: a shape
  // such as [0, 2^56, 2^56] holds no elements, yet its strides would overflow.
  std::int64_t numel() const {
    std::int64_t nonzero = 1;
    bool zero = false;
    for (auto d : dims_) {
      if (d == 0) {
        zero = true;
      } else if (__builtin_mul_overflow(nonzero, d, &nonzero) || nonzero > kMaxShapeProduct ||
                 nonzero < -kMaxShapeProduct) {
        too_large();
      }
    }
    return zero ? 0 : nonzero;
  }
  std::int64_t operator[](std::size_t i) const { return dims_[i]; }
  std::int64_t& operator[](std::size_t i) { return dims_[i]; }
  // Negative indices count from the end, as in Python.
  std::int64_t at(std::int64_t i) const;
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::vector<std::int64_t>& dims() { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  std::string str() const;  // "[2, 3, 4]"

  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  [[noreturn]] void too_large() const;
  std::vector<std::int64_t> dims_;
};

inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

// Row-major (C-contiguous) strides, in elements.
std::vector<std::int64_t> contiguous_strides(const Shape& shape);
// NumPy broadcasting of two shapes; throws Error naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Normalises a possibly negative dim against rank; throws Error naming the op.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t rank, const char* op);

}  // namespace convkit
