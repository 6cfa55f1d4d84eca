#pragma once
// Device memory for the GPU backends: the one place where the cuda and sim
// builds of src/gpu differ. Under nvcc it is cudaMalloc behind a caching
// allocator; under sim it is aligned host memory (a sim "device" pointer is a
// host pointer, which is what lets gdb print kernel data).
#include <cstddef>
#include <cstdint>

#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

void* device_allocate(std::size_t nbytes);
void device_free(void* ptr, std::size_t nbytes);
void copy_host_to_device(void* dst, const void* src, std::size_t nbytes);
void copy_device_to_host(void* dst, const void* src, std::size_t nbytes);
void copy_device_to_device(void* dst, const void* src, std::size_t nbytes);
// Waits for every launched kernel; kernel faults surface here as Error.
void device_synchronize();

// Device-to-host copies made so far by this process (each one waits for the
// device): the tests count them to hold a training step to none.
std::uint64_t device_to_host_copies();

}  // namespace convkit::CK_GPU_NS
