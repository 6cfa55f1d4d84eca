// The GPU im2col+GEMM convolution (src/gpu/gpu_conv_im2col_gemm.cpp) on the
// sim backend (and, in the nvcc build, cuda), called through the Backend interface: forward, backward-data
// and backward-weights (with bias gradient) against the cpu backend's direct
// algorithm in float64, for groups, depthwise, 1x1 (no im2col), stride,
// dilation and asymmetric padding, and under workspace limits that force
// chunks of every size down to one image (with a ragged last chunk). These
// test the explicit column path (conv2d_implicit_gemm version 1); the
// implicit versions have their own suite, tests/gpu/conv_implicit_gemm.
#include "gpu/gpu_testing.h"
#include "kernels/conv2d_implicit_gemm.cuh"

namespace convkit {
namespace {

Conv2dDesc make_desc(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K, std::int64_t R,
                     std::int64_t S) {
  Conv2dDesc d;
  d.N = N, d.C = C, d.H = H, d.W = W, d.K = K, d.R = R, d.S = S;
  return d;
}

std::vector<Conv2dDesc> descriptors() {
  std::vector<Conv2dDesc> out;
  out.push_back(make_desc(5, 3, 7, 6, 4, 3, 3));  // plain 3x3, no padding
  Conv2dDesc d = make_desc(5, 4, 8, 7, 6, 3, 2);   // groups, stride, asymmetric padding
  d.groups = 2, d.stride_h = 2, d.stride_w = 1, d.pad_top = 1, d.pad_bottom = 0, d.pad_left = 2, d.pad_right = 1;
  out.push_back(d);
  d = make_desc(3, 4, 9, 9, 4, 3, 3);  // depthwise, dilated
  d.groups = 4, d.dilation_h = 2, d.dilation_w = 2, d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 2;
  out.push_back(d);
  out.push_back(make_desc(4, 6, 5, 3, 5, 1, 1));  // 1x1, stride 1: the image is its own column matrix
  d = make_desc(3, 6, 5, 5, 4, 1, 1);             // 1x1 with stride: im2col again
  d.stride_h = d.stride_w = 2;
  out.push_back(d);
  d = make_desc(1, 2, 4, 5, 3, 5, 4);  // window larger than the input
  d.pad_top = 2, d.pad_bottom = 1, d.pad_left = 1, d.pad_right = 2;
  out.push_back(d);
  return out;
}

std::size_t workspace_bytes(Backend& be, const Conv2dDesc& d, DType dt, ConvPass pass) {
  return be.conv2d_workspace_bytes(ConvAlgo::im2col_gemm, d, dt, pass);
}

Tensor workspace(Backend& be, const Conv2dDesc& d, DType dt, ConvPass pass, Device device) {
  const std::size_t bytes = workspace_bytes(be, d, dt, pass);
  return bytes ? Tensor::empty({static_cast<std::int64_t>((bytes + 3) / 4)}, TensorOptions().device(device)) : Tensor();
}

// The three passes of `d` on `device` with `algo`, in dtype dt.
struct Passes {
  Tensor y, dx, dw, db;
};
Passes run(Device device, ConvAlgo algo, const Conv2dDesc& d, DType dt, const Tensor& x, const Tensor& w,
           const Tensor& b, const Tensor& dy) {
  Backend& be = backend_for(device);
  const TensorOptions o = TensorOptions().dtype(dt).device(device);
  auto on = [&](const Tensor& t) { return t.to(dt).to(device); };
  Passes p;
  p.y = Tensor::empty({d.N, d.K, d.P(), d.Q()}, o);
  p.dx = Tensor::empty({d.N, d.C, d.H, d.W}, o);
  p.dw = Tensor::empty({d.K, d.C_per_group(), d.R, d.S}, o);
  p.db = Tensor::empty({d.K}, o);
  be.conv2d_forward(algo, d, on(x), on(w), on(b), p.y, workspace(be, d, dt, ConvPass::forward, device));
  be.conv2d_backward_data(algo, d, on(dy), on(w), p.dx, workspace(be, d, dt, ConvPass::backward_data, device));
  be.conv2d_backward_weights(algo, d, on(x), on(dy), p.dw, p.db,
                             workspace(be, d, dt, ConvPass::backward_weights, device));
  return p;
}

TEST(GpuConvIm2colGemm, EveryPassMatchesTheCpuDirectAlgorithmUnderEveryChunking) {
  std::mt19937_64 rng(testing::kSeed + 510);
  CK_GPU_NS::register_conv2d_implicit_gemm_family();  // before selecting one of its versions
  const testing::ScopedKernelVersion explicit_path("conv2d_implicit_gemm", CK_GPU_NS::kImplicitGemmExplicitVersion);
  const Device sim = testing::kernel_device();
  Backend& be = backend_for(sim);
  for (Conv2dDesc d : descriptors()) {
    ASSERT_TRUE(be.conv2d_supports(ConvAlgo::im2col_gemm, d)) << d;
    const TensorOptions cpu64 = TensorOptions().dtype(DType::float64);
    const Tensor x = testing::random_tensor({d.N, d.C, d.H, d.W}, rng, cpu64);
    const Tensor w = testing::random_tensor({d.K, d.C_per_group(), d.R, d.S}, rng, cpu64);
    const Tensor b = testing::random_tensor({d.K}, rng, cpu64);
    const Tensor dy = testing::random_tensor({d.N, d.K, d.P(), d.Q()}, rng, cpu64);
    const Passes want = run(Device(DeviceType::cpu), ConvAlgo::direct, d, DType::float64, x, w, b, dy);

    // One workspace limit per chunk size, from the whole batch down to one
    // image: each is one byte less than the previous chunk's workspace, so
    // the planner must drop to the next smaller chunk.
    std::vector<std::size_t> limits;
    for (std::size_t limit = d.workspace_limit;;) {
      d.workspace_limit = limit;
      std::size_t bytes = 0;
      try {
        bytes = workspace_bytes(be, d, DType::float64, ConvPass::backward_weights);
      } catch (const Error&) {
        break;  // not even one image fits
      }
      limits.push_back(limit);
      if (bytes == 0) break;  // 1x1 with one image: no workspace at all
      limit = bytes - 1;
    }
    EXPECT_EQ(static_cast<std::int64_t>(limits.size()), d.N) << "chunk sizes " << d;
    for (std::size_t limit : limits) {
      d.workspace_limit = limit;
      // float32 once (the planner only sees its element size), float64 at every chunking.
      for (DType dt : {DType::float32, DType::float64}) {
        if (dt == DType::float32 && limit != limits.front()) continue;
        const double tol = dt == DType::float64 ? 1e-10 : 2e-5;
        const Passes got = run(sim, ConvAlgo::im2col_gemm, d, dt, x, w, b, dy);
        const std::string where = detail::concat(dt, " limit ", limit, " ", d);
        EXPECT_TRUE(testing::all_close(got.y, want.y.to_vector<double>(), tol, tol)) << "forward " << where;
        EXPECT_TRUE(testing::all_close(got.dx, want.dx.to_vector<double>(), tol, tol)) << "backward-data " << where;
        EXPECT_TRUE(testing::all_close(got.dw, want.dw.to_vector<double>(), tol, tol)) << "backward-weights " << where;
        EXPECT_TRUE(testing::all_close(got.db, want.db.to_vector<double>(), tol, tol)) << "bias gradient " << where;
      }
    }
  }
}

TEST(GpuConvIm2colGemm, NoBiasLeavesTheOutputToTheProduct) {
  std::mt19937_64 rng(testing::kSeed + 511);
  const Device sim = testing::kernel_device();
  const Conv2dDesc d = make_desc(2, 3, 5, 5, 2, 3, 3);
  const TensorOptions cpu64 = TensorOptions().dtype(DType::float64);
  const Tensor x = testing::random_tensor({d.N, d.C, d.H, d.W}, rng, cpu64);
  const Tensor w = testing::random_tensor({d.K, d.C, d.R, d.S}, rng, cpu64);
  Backend& cpu = backend_for(Device(DeviceType::cpu));
  Tensor want = Tensor::empty({d.N, d.K, d.P(), d.Q()}, cpu64);
  cpu.conv2d_forward(ConvAlgo::direct, d, x, w, Tensor(), want,
                     workspace(cpu, d, DType::float64, ConvPass::forward, Device(DeviceType::cpu)));
  Backend& be = backend_for(sim);
  // The output starts as NaN: without a bias, beta = 0 must never read it.
  Tensor y = full({d.N, d.K, d.P(), d.Q()}, std::nan(""), TensorOptions().dtype(DType::float64).device(sim));
  be.conv2d_forward(ConvAlgo::im2col_gemm, d, x.to(sim), w.to(sim), Tensor(), y,
                    workspace(be, d, DType::float64, ConvPass::forward, sim));
  EXPECT_TRUE(testing::all_close(y, want.to_vector<double>(), 1e-12, 1e-12));
}

TEST(GpuConvIm2colGemm, AWorkspaceLimitBelowOneImageIsAClearError) {
  const Device sim = testing::kernel_device();
  CK_GPU_NS::register_conv2d_implicit_gemm_family();  // before selecting one of its versions
  const testing::ScopedKernelVersion explicit_path("conv2d_implicit_gemm", CK_GPU_NS::kImplicitGemmExplicitVersion);
  Conv2dDesc d = make_desc(2, 8, 16, 16, 4, 3, 3);
  d.workspace_limit = 1000;
  try {
    backend_for(sim).conv2d_workspace_bytes(ConvAlgo::im2col_gemm, d, DType::float32, ConvPass::forward);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("workspace_limit"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("im2col_gemm"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace convkit
