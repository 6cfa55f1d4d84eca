#pragma once
// Preprocessing: the deterministic part of the input pipeline (channel
// conversion, resize, rescale, per-channel normalisation). It is a value that
// serialises to a few key=value lines so a checkpoint stores it next to the
// weights: training reads it from the DataLoader, and predict takes it back
// from the checkpoint, never from the caller. That is what makes "forgot the
// 1/255 at prediction time" impossible: there is no default to fall back on,
// since even "no preprocessing" must be spelled Preprocessing::identity().
//
// Order of application: channels, resize, [augmentation in training], rescale,
// normalize. Augmentation sits between so its fill value (cval) is in raw
// pixel units, as in Keras.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "convkit/core/tensor.h"
#include "convkit/data/transforms.h"

namespace convkit::data {

class Dataset;

class Preprocessing {
 public:
  // Nothing applied. There is deliberately no default constructor.
  static Preprocessing identity();

  // Builders (return *this):
  Preprocessing& rescale(double scale);  // x * scale, e.g. 1.0 / 255
  // Per-channel (x - mean) / std after rescale; one value serves every channel.
  Preprocessing& normalize(std::vector<double> mean, std::vector<double> stddev);
  // height x width at most kMaxResizePixels: the size comes from checkpoint
  // files, and each image at that size is already 200 MB of floats.
  Preprocessing& resize(std::int64_t height, std::int64_t width,
                        Interpolation interpolation = Interpolation::bilinear);
  static constexpr std::int64_t kMaxResizePixels = std::int64_t{1} << 24;  // 4096 x 4096
  Preprocessing& channels(std::int64_t channels);  // 1 (grayscale) or 3 (RGB)

  double scale() const { return scale_; }
  const std::vector<double>& norm_mean() const { return mean_; }  // empty: no normalize
  const std::vector<double>& norm_std() const { return std_; }
  std::optional<std::int64_t> target_channels() const { return channels_; }
  std::int64_t height() const { return height_; }  // 0: no resize
  std::int64_t width() const { return width_; }
  Interpolation interpolation() const { return interpolation_; }

  // Raw images (0..255), [C, H, W] or [N, C, H, W], any device and float
  // dtype: every step, on the host; the result is a new float32 tensor on the
  // input's device.
  Tensor apply(const Tensor& images) const;
  // The two halves the DataLoader calls around augmentation, on one cpu image [C, H, W].
  Tensor apply_geometry(const Tensor& image) const;  // channels, resize
  Tensor apply_values(const Tensor& image) const;    // rescale, normalize
  // [C, H, W] that apply_geometry gives for an input of `input` shape
  // (0 in `input` stays 0: unknown).
  Shape output_shape(const Shape& input) const;

  // Text form:  convkit-preprocessing 1\nrescale=...\nmean=a,b,c\n...
  // Doubles are written in shortest round-trip form, so parse(to_string())
  // reproduces the value exactly.
  std::string to_string() const;
  static Preprocessing parse(const std::string& text);  // Error names the line

  friend bool operator==(const Preprocessing&, const Preprocessing&) = default;

 private:
  Preprocessing() = default;
  double scale_ = 1;
  std::vector<double> mean_, std_;
  std::optional<std::int64_t> channels_;
  std::int64_t height_ = 0, width_ = 0;
  Interpolation interpolation_ = Interpolation::bilinear;
};

// Per-channel mean and standard deviation of a dataset after `before`
// (which must not normalise), for Preprocessing::normalize (Keras'
// ImageDataGenerator.fit, but in the units normalize sees). max_examples 0: all.
struct ChannelStats {
  std::vector<double> mean, std;
};
ChannelStats channel_stats(const Dataset& dataset, const Preprocessing& before,
                           std::int64_t max_examples = 0);

}  // namespace convkit::data
