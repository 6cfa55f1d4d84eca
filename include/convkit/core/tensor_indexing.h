#pragma once
// Index values for Tensor::index, spelled as libtorch spells them:
//
//   using namespace convkit::indexing;
//   t[1]                              // t.select(0, 1): a view, dim 0 removed
//   t.index({Slice(), 0})             // t[:, 0]
//   t.index({Slice(1, None, 2)})      // t[1::2]
//   t.index({Ellipsis, -1})           // t[..., -1]
//   t.index({None, Slice()})          // t[None, :]: a new dim of size 1
//
// Every result is a view (it shares storage and records autograd). An integer
// may be negative (counts from the end) and must lie in [-size, size); a
// slice's start and stop are clamped to the dim as in Python; its step must
// be positive.
#include <cstdint>
#include <optional>

namespace convkit::indexing {

// None is std::nullopt, so Slice(None, 2) reads as in libtorch.
inline constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};

struct Slice {
  // NOLINTNEXTLINE: implicit, as libtorch's Slice
  Slice(std::optional<std::int64_t> start = std::nullopt, std::optional<std::int64_t> stop = std::nullopt,
        std::optional<std::int64_t> step = std::nullopt)
      : start(start), stop(stop), step(step) {}
  std::optional<std::int64_t> start, stop, step;
};

class TensorIndex {
 public:
  enum class Kind { integer, slice, none, ellipsis };

  TensorIndex(std::int64_t i) : kind_(Kind::integer), integer_(i) {}  // NOLINT
  TensorIndex(int i) : kind_(Kind::integer), integer_(i) {}           // NOLINT: t.index({0})
  TensorIndex(Slice s) : kind_(Kind::slice), slice_(s) {}             // NOLINT
  TensorIndex(std::nullopt_t) : kind_(Kind::none) {}                  // NOLINT
  TensorIndex(EllipsisIndexType) : kind_(Kind::ellipsis) {}           // NOLINT

  Kind kind() const { return kind_; }
  std::int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }

 private:
  Kind kind_;
  std::int64_t integer_ = 0;
  Slice slice_;
};

}  // namespace convkit::indexing
