#include "convkit/core/storage.h"

#include "convkit/backend/backend.h"

namespace convkit {

std::shared_ptr<Storage> Storage::allocate(std::size_t nbytes, Device device) {
  Backend& backend = backend_for(device);
  void* data = nbytes ? backend.allocate(nbytes) : nullptr;
  return std::shared_ptr<Storage>(new Storage(data, nbytes, device, &backend));
}

Storage::~Storage() {
  if (data_) backend_->deallocate(data_, nbytes_);
}

}  // namespace convkit
