#include "convkit/core/storage.h"

#include <array>
#include <new>

#include "convkit/core/error.h"
#include "convkit/core/memory.h"
#include "core/op_scope.h"

namespace convkit {

namespace {

constexpr std::size_t kDeviceTypes = 3;  // cpu, sim, cuda

struct Usage {
  std::atomic<std::size_t> in_use{0};
  std::atomic<std::size_t> limit{0};  // 0: none
};

Usage& usage(DeviceType type) {
  static std::array<Usage, kDeviceTypes> all;
  return all[static_cast<std::size_t>(type)];
}

thread_local const detail::OpScope* t_scope = nullptr;

[[noreturn]] void out_of_memory(Device device, std::size_t nbytes, const Shape* shape, DType dtype,
                                const std::string& cause) {
  const std::string what = shape ? detail::concat(*shape, " ", dtype, " ") : std::string();
  const Usage& u = usage(device.type);
  const std::size_t limit = u.limit.load();
  const std::string op = detail::current_op();
  CK_FAIL(op.empty() ? "allocation" : op, ": out of memory on ", device, " allocating ", what, "(",
          nbytes, " bytes; ", u.in_use.load(), " bytes in use",
          limit ? ", limit " + std::to_string(limit) : std::string(), ")",
          cause.empty() ? std::string() : ": " + cause);
}

}  // namespace

namespace detail {

std::string current_op() {
  if (!t_scope) return "";
  const OpScope* outermost = t_scope;
  while (outermost->outer_) outermost = outermost->outer_;
  std::string name = t_scope->name_;
  if (outermost != t_scope && name != outermost->name_) name += std::string(" in ") + outermost->name_;
  return name;
}

OpScope::OpScope(const char* name) noexcept : name_(name), outer_(t_scope) { t_scope = this; }
OpScope::~OpScope() { t_scope = outer_; }

}  // namespace detail

std::size_t memory_allocated(DeviceType type) { return usage(type).in_use.load(); }
void set_memory_limit(DeviceType type, std::size_t bytes) { usage(type).limit.store(bytes); }
std::size_t memory_limit(DeviceType type) { return usage(type).limit.load(); }

std::shared_ptr<Storage> Storage::allocate(std::size_t nbytes, Device device, const Shape* shape,
                                           DType dtype) {
  Allocator& allocator = allocator_for(device);
  if (nbytes == 0) return std::shared_ptr<Storage>(new Storage(nullptr, 0, device, &allocator));
  Usage& u = usage(device.type);
  // Counted before allocating, so that threads racing for the last bytes
  // under a cap cannot both get them.
  const std::size_t before = u.in_use.fetch_add(nbytes);
  const std::size_t limit = u.limit.load();
  if (limit != 0 && before + nbytes > limit) {
    u.in_use.fetch_sub(nbytes);
    out_of_memory(device, nbytes, shape, dtype, "");
  }
  void* data = nullptr;
  try {
    data = allocator.allocate(nbytes);
  } catch (const Error& e) {  // an allocator fails only for want of memory
    u.in_use.fetch_sub(nbytes);
    out_of_memory(device, nbytes, shape, dtype, e.what());
  } catch (const std::bad_alloc&) {  // the bookkeeping of a checked sim allocation
    u.in_use.fetch_sub(nbytes);
    out_of_memory(device, nbytes, shape, dtype, "");
  }
  try {
    return std::shared_ptr<Storage>(new Storage(data, nbytes, device, &allocator));
  } catch (...) {
    allocator.deallocate(data, nbytes);
    u.in_use.fetch_sub(nbytes);
    throw;
  }
}

Storage::~Storage() {
  if (data_) {
    allocator_->deallocate(data_, nbytes_);
    usage(device_.type).in_use.fetch_sub(nbytes_);
  }
}

}  // namespace convkit
