// Names of the convolution algorithms, read from the table in convkit/conv/algorithms.h.
#include "convkit/conv/algorithms.h"

#include "convkit/core/error.h"

namespace convkit {

const ConvAlgoInfo& conv_algo_info(ConvAlgo algo) {
  const auto index = static_cast<std::size_t>(algo);
  CK_CHECK(algo != ConvAlgo::automatic, "conv_algo_info: 'automatic' is not an algorithm; resolve it first");
  CK_CHECK(index >= 1 && index <= kConvAlgorithms.size(), "conv_algo_info: unknown ConvAlgo value ",
           static_cast<int>(algo));
  return kConvAlgorithms[index - 1];
}

std::string_view conv_algo_name(ConvAlgo a) {
  if (a == ConvAlgo::automatic) return "automatic";
  for (const ConvAlgoInfo& info : kConvAlgorithms)
    if (info.algo == a) return info.name;
  return "unknown";
}

ConvAlgo parse_conv_algo(std::string_view text) {
  if (text == "automatic") return ConvAlgo::automatic;
  for (const ConvAlgoInfo& info : kConvAlgorithms)
    if (info.name == text) return info.algo;
  CK_FAIL("unknown convolution algorithm '", text, "'; valid names are: ", conv_algo_names(true));
}

std::string conv_algo_names(bool with_automatic, std::string_view separator) {
  std::string names = with_automatic ? "automatic" : "";
  for (const ConvAlgoInfo& info : kConvAlgorithms) {
    if (!names.empty()) names += separator;
    names += info.name;
  }
  return names;
}

}  // namespace convkit
