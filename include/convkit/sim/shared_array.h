#pragma once
// SharedArray<T[N]...> for the sim backend: a __shared__ array the sim checks
// can see (convkit/sim/check.h).
//
// Kernels declare static shared memory as
//   __shared__ SharedArray<float[16][17]> tile;
// and use `tile` exactly like the array: tile[y][x], &tile[k][0], passing it
// to a T (*)[17] parameter. Under nvcc SharedArray<A> is A itself
// (cuda_compat.h), so the declaration is the plain `__shared__ float tile[16][17]`.
// Under sim it wraps the array between two guard zones and, the first time an
// OS thread runs the declaration, tells the checks where the array is and
// where it was declared, so memcheck can tell an overrun of one array into its
// neighbour, and initcheck and racecheck can watch its words. A plain
// `__shared__ float tile[16][17]` still works, unchecked.
#include <cstddef>
#include <type_traits>

namespace convkit::sim {

namespace detail {
// Bytes of guard zone on each side of a SharedArray, and its registration.
inline constexpr std::size_t kSharedArrayGuard = 64;
void add_shared_array(void* data, std::size_t bytes, std::size_t guard, const char* file, int line);
}  // namespace detail

template <typename Array>
class SharedArray {
  static_assert(std::is_array_v<Array>, "SharedArray<A>: A is an array type, as in SharedArray<float[32]>");

 public:
  // Runs once per OS thread (a block-scope thread_local), where the kernel
  // declares the array: the default arguments name that line.
  SharedArray(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    detail::add_shared_array(data_, sizeof(Array), detail::kSharedArrayGuard, file, line);
  }
  SharedArray(const SharedArray&) = delete;
  SharedArray& operator=(const SharedArray&) = delete;

  // The array's decay, a pointer to its first element: tile[y][x] and
  // passing `tile` on work through it.
  operator std::decay_t<Array>() { return data_; }

 private:
  unsigned char front_guard_[detail::kSharedArrayGuard];
  alignas(16) Array data_;
  unsigned char back_guard_[detail::kSharedArrayGuard];
};

}  // namespace convkit::sim
