"""How a convolution reaches a kernel: nn -> op -> backend -> algorithm -> kernel.

Every name in a box is listed in FACTS with the file that must contain it;
the kernel families and their versions are read from register_kernel_family
calls in kernels/*.cu.
"""
from sources import kernel_families, require
from svg import COLOURS, Svg

# (file, text that must occur in it) for every name the boxes print.
FACTS = [
    ("src/nn/conv.cpp", "Tensor Conv2d::forward(const Tensor& x)"),
    ("src/nn/conv.cpp", "return conv2d(x, weight, bias, options_.params());"),
    ("src/ops/conv.cpp", "Tensor conv2d(const Tensor& x_in, const Tensor& w_in"),
    ("src/ops/conv.cpp", "Conv2dDesc make_conv2d_desc("),
    ("src/ops/conv.cpp", "const ConvPlan plan = select_conv_plan("),
    ("src/ops/conv.cpp", "backend.conv2d_forward(algo, d,"),
    ("src/ops/conv.cpp", "return record(y, \"Conv2dBackward\""),
    ("src/ops/conv_algo_selection.cpp", "ConvPlan select_conv_plan("),
    ("src/ops/conv_algo_selection.cpp", "same_for_every_pass(backend_for(device).conv2d_heuristic(desc, dtype))"),
    ("src/ops/conv_algo_selection.cpp", "benchmark_passes(desc, dtype, device, missing, plan, report);"),
    ("include/convkit/backend/backend.h", "Backend& backend_for(Device device);"),
    ("include/convkit/backend/backend.h", "virtual bool supports(BackendOp op) const;"),
    ("include/convkit/backend/backend.h", "std::vector<BackendOp> fallbacks() const;"),
    ("include/convkit/backend/backend.h", "virtual Support conv2d_supports(ConvAlgo algo"),
    ("include/convkit/backend/backend.h", "virtual ConvAlgo conv2d_heuristic("),
    ("include/convkit/backend/backend_ops.h", "X(conv2d)"),
    ("src/backend/cpu_fallback.cpp", "std::vector<BackendOp> Backend::fallbacks() const {"),
    ("src/backend/registry.cpp", "BackendRegistrar"),
    ("src/backend/plugin_loader.cpp", "dlopen(path.c_str(), RTLD_NOW"),
    ("src/conv/conv_dispatch.h", "void dispatch_forward(const ConvAlgorithmRegistry& registry"),
    ("src/conv/conv_algorithm.h", "class ConvAlgorithmRegistry"),
    ("include/convkit/conv/algorithms.h", "kConvAlgorithms"),
    ("src/cpu/cpu_backend.h", "class CpuBackend final : public Backend"),
    ("src/cpu/isa_dispatch.cpp", "const BackendRegistrar registrar(DeviceType::cpu"),
    ("src/cpu/cpu_conv.cpp", "ConvAlgo CpuBackend::conv2d_heuristic("),
    ("src/cpu/conv/conv_direct.cpp", "ConvAlgorithmRegistrar"),
    ("src/cpu/conv/conv_im2col_gemm.cpp", "class Im2colGemmConv final : public ConvAlgorithm"),
    ("src/cpu/isa_dispatch.cpp", "ConvAlgorithmRegistrar kIm2colGemm"),
    ("src/cpu/conv/conv_fft.cpp", "ConvAlgorithmRegistrar"),
    ("src/cpu/conv/conv_winograd.cpp", "class WinogradConv final : public ConvAlgorithm"),
    ("src/cpu/isa_dispatch.cpp", "ConvAlgorithmRegistrar kWinograd"),
    ("src/cpu/conv/tap_gemm.h", "#pragma once"),
    ("src/gpu/gpu_backend.h", "class GpuBackend final : public Backend"),
    ("src/gpu/gpu_backend.cpp", "const BackendRegistrar registrar(DeviceType::sim, make_backend);"),
    ("src/gpu/gpu_backend.cpp", "const BackendRegistrar registrar(DeviceType::cuda, make_backend);"),
    ("src/gpu/gpu_conv.cpp", "ConvAlgo GpuBackend::conv2d_heuristic("),
    ("src/gpu/gpu_conv.cpp", "conv::ConvAlgorithmRegistry& conv_registry()"),
    ("src/gpu/gpu_conv_direct.cpp", "ConvAlgorithmRegistrar"),
    ("src/gpu/gpu_conv_im2col_gemm.cpp", "ConvAlgorithmRegistrar"),
    ("src/gpu/gpu_conv_fft.cpp", "ConvAlgorithmRegistrar"),
    ("src/gpu/gpu_conv_winograd.cpp", "ConvAlgorithmRegistrar"),
    ("include/convkit/sim/cuda_compat.h", "#define CK_GPU_NS gpu_sim"),
    ("include/convkit/sim/cuda_compat.h", "#define CK_GPU_NS gpu_cuda"),
    ("src/sim/grid.cpp", "void run_grid(const GridLaunch& launch)"),
    ("src/sim/fiber.h", "Fibers: the execution vehicles of CUDA threads under sim."),
    ("include/convkit/backend/kernel_versions.h", "int kernel_version(const std::string& family);"),
    ("include/convkit/backend/kernel_versions.h", "CONVKIT_KERNEL_<FAMILY>=<version>"),
]
CONV_FAMILIES = ("conv2d_direct", "conv2d_implicit_gemm", "im2col", "gemm", "conv2d_fft", "conv2d_winograd")


def check():
    for path, needle in FACTS:
        require(path, needle)
    families = kernel_families()
    missing = [f for f in CONV_FAMILIES if f not in families]
    if missing:
        raise AssertionError(f"kernel families {missing} are no longer registered in kernels/*.cu")
    return families


def draw():
    families = check()
    s = Svg(1240, 1040, "op -> backend -> kernel: how conv2d reaches a kernel")
    s.text(24, 36, "How a convolution reaches a kernel: nn \u2192 op \u2192 backend \u2192 algorithm \u2192 kernel",
           size=22, weight="bold")
    s.text(24, 60, "Every name is checked against the sources by the generator; kernel versions are read from"
           " register_kernel_family in kernels/*.cu.", size=13)

    # Row 1: module and op.
    s.box(24, 84, 330, 100, "ops", "nn::Conv2d::forward(x)", ["src/nn/conv.cpp", "conv2d(x, weight, bias,",
                                                              "       options_.params())"])
    s.box(410, 84, 806, 100, "ops", "conv2d()  src/ops/conv.cpp",
          ["checks \u2192 make_conv2d_desc \u2192 select_conv_plan (conv_algo_selection.cpp: auto \u2192 the",
           "backend's conv2d_heuristic, or each pass timed) \u2192 conv2d_supports \u2192 conv2d_forward",
           "\u2192 autograd::record(\"Conv2dBackward\"): backward runs conv2d_backward_data/_weights"])
    s.arrow(354, 134, 408, 134)

    # Row 2: backend lookup and interface, fallback, shared conv layer.
    s.box(24, 230, 360, 150, "backend", "backend_for(device)",
          ["src/backend/registry.cpp", "each backend adds a factory", "with a BackendRegistrar;",
           "cuda: plugin_loader.cpp", "dlopen(libconvkit_cuda.so)"])
    s.box(410, 230, 420, 150, "backend", "class Backend  backend/backend.h",
          ["one virtual per BackendOp", "(backend_ops.h: X(conv2d) ...);", "conv2d_supports/_workspace_bytes/",
           "_heuristic/_forward/_backward_*;", "supports(op), fallbacks()"])
    s.box(856, 230, 360, 150, "backend", "default methods: cpu fallback",
          ["src/backend/cpu_fallback.cpp", "an op a backend does not claim", "in supports(): copy spans to",
           "the host, run backend_for(cpu),", "copy back (one warning)"])
    s.arrow(620, 184, 620, 228)
    s.arrow(384, 305, 408, 305)
    s.arrow(830, 305, 854, 305, dash="5,4")

    # Shared geometry and dispatch, used by all three backends.
    s.box(24, 420, 1192, 78, "conv", "src/conv (below every backend): one adapter, one registry per backend",
          ["conv_dispatch.h: dispatch_forward/... check tensors + workspace, then ConvAlgorithmRegistry runs the"
           " algorithm;", "Conv2dDesc, algorithms.h kConvAlgorithms, implicit_gemm.h, correlation.h, fft_tiling.h,"
           " winograd_tiling.h"], size=12)
    s.arrow(620, 380, 620, 418)

    # Row 3: the three backends.
    cols = [(24, "cpu", "cpu: CpuBackend", ["src/cpu/cpu_backend.cpp, built for", "  3 ISAs; isa_dispatch.cpp picks one",
                                             "conv2d_heuristic: cpu_conv.cpp",
                                             "cpu::conv_registry():", "src/cpu/conv/conv_direct.cpp",
                                             "  conv_im2col_gemm.cpp (Eigen,", "    tap_gemm.h AVX2, AVX-512)",
                                             "  conv_fft.cpp, conv_winograd.cpp"]),
            (430, "gpu", "sim: GpuBackend in gpu_sim::", ["src/gpu/*.cpp compiled by g++", "conv2d_heuristic: gpu_conv.cpp",
                                                          "gpu_sim::conv_registry():", "src/gpu/gpu_conv_direct.cpp",
                                                          "  gpu_conv_im2col_gemm.cpp", "  gpu_conv_fft.cpp",
                                                          "  gpu_conv_winograd.cpp"]),
            (836, "gpu", "cuda: GpuBackend in gpu_cuda::", ["the same src/gpu/*.cpp, by nvcc,", "in the plugin",
                                                            "libconvkit_cuda.so (cudart,", "cuBLAS, cuFFT)",
                                                            "gpu_cuda::conv_registry():", "  the same four files",
                                                            "CK_GPU_NS picks the namespace"])]
    for x, kind, head, rows in cols:
        s.box(x, 540, 380, 190, kind, head, rows, size=13)
        s.arrow(x + 190, 498, x + 190, 538)

    # Row 4: kernels, and how each GPU build runs them.
    fam_rows = []
    for f in CONV_FAMILIES:
        versions, default = families[f]
        fam_rows.append(f"{f:<21} v1..v{versions}  (default v{default})" if versions > 1
                        else f"{f:<21} v1")
    s.box(430, 770, 786, 186, "kernel", "kernels/*.cu: the same kernel source for sim and cuda",
          fam_rows + ["kernel_version(family); CONVKIT_KERNEL_<FAMILY>=N picks a version"], size=13)
    s.arrow(620, 730, 620, 768)
    s.arrow(1026, 730, 1026, 768)
    s.box(24, 770, 380, 186, "sim", "sim runs them on the CPU",
          ["src/sim: kernels compiled by g++", "as C++; run_grid (grid.cpp)", "runs the blocks; each CUDA",
           "thread is a fiber (fiber.h),", "switched at __syncthreads;", "memcheck/racecheck: src/sim/check"],
          size=13)
    s.arrow(428, 863, 406, 863)
    s.text(24, 980, "Solid arrows: calls. Dashed: the fallback a backend gets for an op it does not claim.", size=13)
    s.text(24, 1020, "Colours: layers of cmake/ConvkitLayers.cmake (kernels/ is gpu's):", size=13)
    keys = [("ops", "nn, ops"), ("backend", "backend"), ("conv", "conv"), ("cpu", "cpu"), ("gpu", "gpu (host)"),
            ("sim", "sim"), ("kernel", "kernels")]
    for i, (kind, label) in enumerate(keys):
        s.legend(480 + i * 106, 1010, [(COLOURS[kind], COLOURS[kind + "_edge"], label)], size=12, swatch=12)
    return s.render()
