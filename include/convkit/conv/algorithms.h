#pragma once
// The one table of convolution algorithms. Everything that lists them (name
// parsing, the CLI's --algo, bench_conv's --algos, benchmark-mode selection,
// the per-backend registries' consistency test) reads kConvAlgorithms.
//
// Adding an algorithm: a value in ConvAlgo, a line in kConvAlgorithms, and
// one file per backend that implements it (src/cpu/conv/conv_NAME.cpp,
// src/gpu/gpu_conv_NAME.cpp), which registers itself with its backend's
// registry (src/conv/conv_algorithm.h). tests/conv/test_conv_algorithm_table
// fails if a registry and the table disagree.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace convkit {

// automatic is not an algorithm but a request to pick one (convkit/ops/conv_algo.h).
enum class ConvAlgo { automatic, direct, im2col_gemm, fft, winograd };

struct ConvAlgoInfo {
  ConvAlgo algo;
  std::string_view name;     // what --algo, parse_conv_algo and benchmark names use
  bool cpu;                  // implemented by the cpu backend (src/cpu/conv/)
  bool gpu;                  // implemented by the sim and cuda backends (src/gpu/)
  std::string_view summary;  // one line for help texts
  std::string_view doc;      // the page that explains it
};

// In ConvAlgo order, automatic excluded.
inline constexpr std::array<ConvAlgoInfo, 4> kConvAlgorithms{{
    {ConvAlgo::direct, "direct", true, true, "the seven loops, no workspace, every descriptor",
     "docs/algorithms/direct.md"},
    {ConvAlgo::im2col_gemm, "im2col_gemm", true, true, "column matrix (or implicit GEMM) times the filter matrix",
     "docs/algorithms/im2col_gemm.md"},
    {ConvAlgo::fft, "fft", true, true, "overlap-save FFT tiles, stride 1", "docs/algorithms/fft.md"},
    {ConvAlgo::winograd, "winograd", true, true, "F(2x2,3x3) and F(4x4,3x3): 3x3 filters, stride 1, no dilation",
     "docs/algorithms/winograd.md"},
}};

// The table is indexed by ConvAlgo: a value added to the enum without its line
// (or a line out of order) fails to compile here.
constexpr bool conv_algorithm_table_in_enum_order() {
  for (std::size_t i = 0; i < kConvAlgorithms.size(); ++i)
    if (static_cast<std::size_t>(kConvAlgorithms[i].algo) != i + 1) return false;
  return static_cast<std::size_t>(ConvAlgo::winograd) == kConvAlgorithms.size();
}
static_assert(conv_algorithm_table_in_enum_order(), "kConvAlgorithms must list every ConvAlgo but automatic, in order");

// The table's line for `algo`; throws Error for automatic or a value outside the enum.
const ConvAlgoInfo& conv_algo_info(ConvAlgo algo);
// "automatic" or the table's name ("unknown" outside the enum).
std::string_view conv_algo_name(ConvAlgo a);
// Parses "automatic" or a table name; throws Error listing the valid names otherwise.
ConvAlgo parse_conv_algo(std::string_view text);
// The valid names joined by `separator`, automatic first when asked for.
std::string conv_algo_names(bool with_automatic, std::string_view separator = ", ");

}  // namespace convkit
