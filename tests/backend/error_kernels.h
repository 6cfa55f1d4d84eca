#pragma once
// Two small kernels built by g++ for sim (error_kernels.cpp, which includes
// nothing but the kernels' header, as kernels/*.cu do), for the launch-error
// tests.
namespace convkit::kernel_error_test {

// out[i] = 1 for i < n.
void launch_fill_ones(unsigned grid, unsigned block, float* out, int n);
// out[block] = 2, except that block `bad_block` throws.
void launch_fail_in_block(unsigned grid, unsigned block, float* out, int bad_block);

}  // namespace convkit::kernel_error_test
