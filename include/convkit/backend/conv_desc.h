#pragma once
// Description of one 2-D convolution, shared by every backend and algorithm.
// Layout is NCHW input, KCRS filters (C per group), NKPQ output.
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "convkit/conv/algorithms.h"  // ConvAlgo and the table of algorithms

namespace convkit {

// The three passes of a convolution; workspace needs differ between them.
enum class ConvPass { forward, backward_data, backward_weights };
std::string_view conv_pass_name(ConvPass pass);

struct Conv2dDesc {
  std::int64_t N = 1, C = 1, H = 1, W = 1;  // input
  std::int64_t K = 1, R = 1, S = 1;         // filters: K outputs, R x S window
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
  // Upper bound on scratch memory an algorithm may ask for (im2col chunks the
  // batch to stay under it).
  std::size_t workspace_limit = std::size_t{256} << 20;

  std::int64_t P() const {  // output height
    return (H + pad_top + pad_bottom - dilation_h * (R - 1) - 1) / stride_h + 1;
  }
  std::int64_t Q() const {  // output width
    return (W + pad_left + pad_right - dilation_w * (S - 1) - 1) / stride_w + 1;
  }
  std::int64_t C_per_group() const { return C / groups; }
  std::int64_t K_per_group() const { return K / groups; }
  // Multiply-adds x 2 of one pass (forward, backward-data and backward-weights all cost the same).
  double flops() const {
    return 2.0 * static_cast<double>(N) * K * C_per_group() * R * S * P() * Q();
  }
  // Throws Error naming every field when the description is inconsistent.
  void validate(const char* op) const;
  std::string str() const;
};

std::ostream& operator<<(std::ostream& os, const Conv2dDesc& d);

// Where a convolution algorithm runs a numbered kernel family for one
// descriptor (convkit/backend/kernel_versions.h): the family, and the versions
// of it to time there (tuning_versions, less those that cannot run the
// descriptor). An empty family: no versions apply (cpu).
struct KernelChoices {
  std::string family;
  std::vector<int> versions;
};

// Whether an algorithm can run a descriptor, and why not.
struct Support {
  bool ok = true;
  std::string reason;  // empty when ok
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return ok; }
};

}  // namespace convkit
