#include "convkit/core/shape.h"

#include <algorithm>
#include <sstream>

#include "convkit/core/error.h"

namespace convkit {

std::int64_t Shape::at(std::int64_t i) const {
  return dims_[static_cast<std::size_t>(wrap_dim(i, rank(), "Shape::at"))];
}

void Shape::too_large() const {
  CK_FAIL("shape ", str(), ": the product of its non-zero dimensions exceeds 2^62 (",
          kMaxShapeProduct, "); no tensor can have it");
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < dims_.size(); ++i) os << (i ? ", " : "") << dims_[i];
  os << ']';
  return os.str();
}

std::vector<std::int64_t> contiguous_strides(const Shape& shape) {
  shape.numel();  // throws for a shape whose strides would overflow
  std::vector<std::int64_t> strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<std::int64_t>(shape[i], 1);
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    CK_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", a, " and ", b,
             " cannot be broadcast together (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

std::int64_t wrap_dim(std::int64_t dim, std::int64_t rank, const char* op) {
  const std::int64_t r = std::max<std::int64_t>(rank, 1);
  CK_CHECK(dim >= -r && dim < r, op, ": dim ", dim, " is out of range for a tensor of rank ",
           rank, " (expected ", -r, " to ", r - 1, ")");
  return dim < 0 ? dim + r : dim;
}

}  // namespace convkit
