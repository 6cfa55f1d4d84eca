#pragma once
// SharedArray<T[N]...> for the sim backend: a __shared__ array the sim checks
// can see (convkit/sim/check.h).
//
// Kernels declare static shared memory as
//   __shared__ SharedArray<float[16][17]> tile;
// and use `tile` exactly like the array: tile[y][x], &tile[k][0], passing it
// to a T (*)[17] parameter. Under nvcc SharedArray<A> is A itself
// (cuda_compat.h), so the declaration is the plain `__shared__ float tile[16][17]`.
//
// Under sim the declaration is a block-scope thread_local, constructed the
// first time an OS thread runs it. It asks the runtime for the array's
// storage, once per OS thread (so once per running block, as with a plain
// thread_local), which sits between two guard zones and is known to the checks
// with the line that declares it: memcheck tells an overrun of one array into
// its neighbour, and initcheck and racecheck watch its words. The storage is
// reached through a pointer on purpose: the compiler's instrumentation leaves
// direct accesses to thread_local variables unchecked. A plain
// `__shared__ float tile[16][17]` still works, unchecked.
#include <cstddef>
#include <type_traits>

namespace convkit::sim {

namespace detail {
// Storage for a __shared__ array of `bytes` bytes on this OS thread, aligned
// to 64 bytes, zero-filled, kept until the OS thread ends.
void* shared_array_storage(std::size_t bytes, const char* file, int line);
}  // namespace detail

template <typename Array>
class SharedArray {
  static_assert(std::is_array_v<Array>, "SharedArray<A>: A is an array type, as in SharedArray<float[32]>");

 public:
  // The default arguments name the line of the kernel's declaration.
  SharedArray(const char* file = __builtin_FILE(), int line = __builtin_LINE())
      : data_(static_cast<std::decay_t<Array>>(detail::shared_array_storage(sizeof(Array), file, line))) {}
  SharedArray(const SharedArray&) = delete;
  SharedArray& operator=(const SharedArray&) = delete;

  // The array's decay, a pointer to its first element: tile[y][x] and
  // passing `tile` on work through it.
  operator std::decay_t<Array>() const { return data_; }

 private:
  std::decay_t<Array> data_;
};

}  // namespace convkit::sim
