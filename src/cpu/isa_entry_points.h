// The entry points of one ISA's copy of the cpu backend: the functions its
// objects export (cmake/ConvkitIsa.cmake makes everything else private to
// the copy). No include guard, and no namespace of its own: included inside
// namespace convkit::cpu::isa_<name>, once per ISA, by cpu/isa_dispatch.h
// and (for the copy being compiled) cpu/isa_namespace.h. The callers'
// headers (backend.h, implementations.h, cpu_pool.h) come first.

// The backend object this copy implements (cpu_backend.cpp).
Backend& backend();

// tap_gemm.h's functions, this copy's kernels (tap_gemm.cpp).
bool tap_gemm_compiled();
bool tap_gemm_shape(const Conv2dDesc& d);
std::int64_t tap_gemm_scratch_floats(const Conv2dDesc& d, ConvPass pass);
std::int64_t tap_gemm_flipped_filter_floats(const Conv2dDesc& d);
void tap_gemm_flip_filters(const Conv2dDesc& d, const float* w, float* wflip);
void tap_gemm_forward_image(const Conv2dDesc& d, const float* x_image, const float* w, const float* b,
                            float* y_image, float* scratch, bool parallel);
void tap_gemm_backward_data_image(const Conv2dDesc& d, const float* dy_image, const float* wflip,
                                  float* dx_image, float* scratch, bool parallel);
void tap_gemm_multiply(const float* a, std::int64_t rows, const std::int64_t* offsets, std::int64_t taps,
                       const float* b, std::int64_t cols, float* out, std::int64_t out_stride);
void tap_gemm_backward_weights_image(const Conv2dDesc& d, const float* x_image, const float* dy_image,
                                     float* dw, float* scratch, bool parallel);

// The conv algorithms whose kernels this copy compiles (implementations.h
// names the dispatching accessors every caller uses).
const ConvAlgorithm& im2col_gemm_conv_algorithm_with_kernel(GemmKernel kernel);  // conv_im2col_gemm.cpp
const ConvAlgorithm& winograd_conv_algorithm_with(int output_tile, GemmKernel kernel);  // conv_winograd.cpp

// The max-pool forward kernels (cpu_pool.cpp), for the tests that check the
// 2x2 stride-2 version against its generic twin. Any window, stride and
// padding; every output's value and the index of the winning input in its
// plane (the first maximum in row-major order; a NaN always takes over, as
// in PyTorch).
template <typename T>
void max_pool2d_generic(const T* x, T* y, std::int64_t* argmax, const PoolGeometry& g, const PoolWindow& w);
// The same for a 2x2 window with stride 2 and no padding, every window whole
// (2*OH <= H, 2*OW <= W).
template <typename T>
void max_pool2d_2x2s2(const T* x, T* y, std::int64_t* argmax, const PoolGeometry& g);
