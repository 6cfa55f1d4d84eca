#include "convkit/data/preprocessing.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "convkit/data/dataset.h"
#include "data/pixels.h"

namespace convkit::data {

namespace {

constexpr const char* kHeader = "convkit-preprocessing 1";

std::string format_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return std::string(buf, r.ptr);
}

std::string join(const std::vector<double>& values) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) s += ',';
    s += format_double(values[i]);
  }
  return s;
}

template <typename... Args>
[[noreturn]] void parse_fail(int line, Args&&... what) {
  CK_FAIL("Preprocessing::parse: line ", line, ": ", std::forward<Args>(what)...);
}

double parse_double(const std::string& text, int line, const std::string& key) {
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || !std::isfinite(v)) {
    parse_fail(line, key, ": '", text, "' is not a finite number");
  }
  return v;
}

std::int64_t parse_int(const std::string& text, int line, const std::string& key) {
  std::int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    parse_fail(line, key, ": '", text, "' is not an integer");
  }
  return v;
}

std::vector<double> parse_list(const std::string& text, int line, const std::string& key) {
  std::vector<double> values;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    values.push_back(parse_double(text.substr(start, comma - start), line, key));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return values;
}

// Rethrows a builder's complaint as a parse error on `line`.
template <typename F>
void apply_at(int line, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    parse_fail(line, e.what());
  }
}

}  // namespace

Preprocessing Preprocessing::identity() { return Preprocessing(); }

Preprocessing& Preprocessing::rescale(double scale) {
  CK_CHECK(std::isfinite(scale) && scale != 0, "Preprocessing::rescale: scale must be finite and non-zero, got ",
           scale);
  scale_ = scale;
  return *this;
}

Preprocessing& Preprocessing::normalize(std::vector<double> mean, std::vector<double> stddev) {
  CK_CHECK(!mean.empty() && !stddev.empty() &&
               (mean.size() == stddev.size() || mean.size() == 1 || stddev.size() == 1),
           "Preprocessing::normalize: needs one mean and one std per channel (or a single value "
           "for all), got ", mean.size(), " means and ", stddev.size(), " stds");
  for (double m : mean) CK_CHECK(std::isfinite(m), "Preprocessing::normalize: mean ", m, " is not finite");
  for (double s : stddev) {
    CK_CHECK(std::isfinite(s) && s > 0, "Preprocessing::normalize: std ", s,
             " must be finite and positive");
  }
  mean_ = std::move(mean);
  std_ = std::move(stddev);
  return *this;
}

Preprocessing& Preprocessing::resize(std::int64_t height, std::int64_t width,
                                     Interpolation interpolation) {
  CK_CHECK(height > 0 && width > 0, "Preprocessing::resize: size must be positive, got ", height,
           "x", width);
  CK_CHECK(height <= kMaxResizePixels / width, "Preprocessing::resize: ", height, "x", width,
           " is more than kMaxResizePixels (", kMaxResizePixels, " pixels, 4096x4096)");
  height_ = height;
  width_ = width;
  interpolation_ = interpolation;
  return *this;
}

Preprocessing& Preprocessing::channels(std::int64_t channels) {
  CK_CHECK(channels == 1 || channels == 3, "Preprocessing::channels: must be 1 or 3, got ",
           channels);
  channels_ = channels;
  return *this;
}

Tensor Preprocessing::apply_geometry(const Tensor& image) const {
  Tensor out = detail::image_arg(image, "Preprocessing");
  if (channels_ && out.size(0) != *channels_) out = convert_channels(out, *channels_);
  if (height_ > 0 && (out.size(1) != height_ || out.size(2) != width_)) {
    out = data::resize(out, height_, width_, interpolation_);
  }
  return out;
}

Tensor Preprocessing::apply_values(const Tensor& image) const {
  Tensor out = detail::image_arg(image, "Preprocessing");
  if (scale_ != 1) out = data::rescale(out, scale_);
  if (!mean_.empty()) out = data::normalize(out, mean_, std_);
  return out;
}

Tensor Preprocessing::apply(const Tensor& images) const {
  CK_CHECK(images.defined() && (images.dim() == 3 || images.dim() == 4),
           "Preprocessing::apply: expected images [C, H, W] or [N, C, H, W], got ",
           images.defined() ? images.shape().str() : std::string("an undefined tensor"));
  CK_CHECK(is_floating(images.dtype()), "Preprocessing::apply: expected float images, got ",
           images.dtype(), " of shape ", images.shape());
  const Device device = images.device();
  const Tensor host = images.to(kCPU).to(DType::float32).contiguous();
  if (host.dim() == 3) {
    Tensor out = apply_values(apply_geometry(host));
    // Identity steps hand back their input: never alias the caller's tensor.
    if (out.storage() == images.storage()) out = out.clone();
    return out.to(device);
  }
  const std::int64_t n = host.size(0);
  const Shape one = output_shape(Shape{host.size(1), host.size(2), host.size(3)});
  Tensor out = Tensor::empty(Shape{n, one[0], one[1], one[2]}, TensorOptions(DType::float32));
  for (std::int64_t i = 0; i < n; ++i) {
    out.select(0, i).copy_(apply_values(apply_geometry(host.select(0, i))));
  }
  return out.to(device);
}

Shape Preprocessing::output_shape(const Shape& input) const {
  CK_CHECK(input.rank() == 3, "Preprocessing::output_shape: expected [C, H, W], got ", input);
  Shape s = input;
  if (channels_) s[0] = *channels_;
  if (height_ > 0) {
    s[1] = height_;
    s[2] = width_;
  }
  return s;
}

std::string Preprocessing::to_string() const {
  // One line per key; appended piecewise (GCC 12's -Wrestrict misfires on
  // chains of std::string operator+ at -O3).
  std::ostringstream s;
  s << kHeader << '\n';
  if (channels_) s << "channels=" << *channels_ << '\n';
  if (height_ > 0) {
    s << "resize=" << height_ << 'x' << width_ << '\n';
    s << "interpolation=" << interpolation_name(interpolation_) << '\n';
  }
  s << "rescale=" << format_double(scale_) << '\n';
  if (!mean_.empty()) {
    s << "mean=" << join(mean_) << '\n';
    s << "std=" << join(std_) << '\n';
  }
  return s.str();
}

Preprocessing Preprocessing::parse(const std::string& text) {
  std::istringstream in(text);
  std::map<std::string, std::pair<std::string, int>> values;  // key -> (value, line)
  bool header = false;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (!header) {
      if (line != kHeader) parse_fail(line_no, "expected '", kHeader, "', got '", line, "'");
      header = true;
      continue;
    }
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) parse_fail(line_no, "expected key=value, got '", line, "'");
    const std::string key = line.substr(0, eq);
    if (key != "channels" && key != "resize" && key != "interpolation" && key != "rescale" &&
        key != "mean" && key != "std") {
      parse_fail(line_no, "unknown key '", key, "'");
    }
    if (values.count(key)) parse_fail(line_no, "key '", key, "' given twice");
    values[key] = {line.substr(eq + 1), line_no};
  }
  if (!header) parse_fail(line_no, "empty text; expected '", kHeader, "'");

  Preprocessing p;
  if (auto it = values.find("channels"); it != values.end()) {
    // Named references, not a structured binding: clang before 16 cannot
    // capture those in the lambdas below.
    const std::string& v = it->second.first;
    const int line = it->second.second;
    apply_at(line, [&] { p.channels(parse_int(v, line, "channels")); });
  }
  if (auto it = values.find("resize"); it != values.end()) {
    const std::string& v = it->second.first;
    const int line = it->second.second;
    const std::size_t x = v.find('x');
    if (x == std::string::npos) parse_fail(line, "resize: expected HEIGHTxWIDTH, got '", v, "'");
    Interpolation interpolation = Interpolation::bilinear;
    if (auto in = values.find("interpolation"); in != values.end()) {
      apply_at(in->second.second, [&] { interpolation = parse_interpolation(in->second.first); });
    }
    apply_at(line, [&] {
      p.resize(parse_int(v.substr(0, x), line, "resize"), parse_int(v.substr(x + 1), line, "resize"),
               interpolation);
    });
  } else if (auto in = values.find("interpolation"); in != values.end()) {
    parse_fail(in->second.second, "interpolation without resize");
  }
  if (auto it = values.find("rescale"); it != values.end()) {
    const std::string& v = it->second.first;
    const int line = it->second.second;
    apply_at(line, [&] { p.rescale(parse_double(v, line, "rescale")); });
  }
  const auto mean = values.find("mean"), stddev = values.find("std");
  if ((mean == values.end()) != (stddev == values.end())) {
    const auto& given = mean != values.end() ? mean->second : stddev->second;
    parse_fail(given.second, "mean and std must be given together");
  }
  if (mean != values.end()) {
    const int line = mean->second.second;
    apply_at(line, [&] {
      p.normalize(parse_list(mean->second.first, line, "mean"),
                  parse_list(stddev->second.first, stddev->second.second, "std"));
    });
  }
  return p;
}

ChannelStats channel_stats(const Dataset& dataset, const Preprocessing& before,
                           std::int64_t max_examples) {
  CK_CHECK(before.norm_mean().empty(),
           "channel_stats: `before` already normalises; pass the preprocessing without normalize");
  CK_CHECK(max_examples >= 0, "channel_stats: max_examples must be >= 0, got ", max_examples);
  const std::int64_t n = max_examples ? std::min(max_examples, dataset.size()) : dataset.size();
  CK_CHECK(n > 0, "channel_stats: the dataset is empty");
  std::vector<double> sum, sum_sq;
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const Tensor image = before.apply_values(before.apply_geometry(dataset.get(i).image));
    const std::int64_t c = image.size(0), plane = image.size(1) * image.size(2);
    if (sum.empty()) {
      sum.assign(static_cast<std::size_t>(c), 0.0);
      sum_sq.assign(static_cast<std::size_t>(c), 0.0);
    }
    CK_CHECK(static_cast<std::int64_t>(sum.size()) == c, "channel_stats: example ", i, " has ", c,
             " channels, earlier ones ", sum.size());
    const float* p = image.data<float>();
    for (std::int64_t ch = 0; ch < c; ++ch) {
      for (std::int64_t k = 0; k < plane; ++k) {
        const double v = p[ch * plane + k];
        sum[static_cast<std::size_t>(ch)] += v;
        sum_sq[static_cast<std::size_t>(ch)] += v * v;
      }
    }
    count += plane;
  }
  ChannelStats stats;
  for (std::size_t ch = 0; ch < sum.size(); ++ch) {
    const double mean = sum[ch] / static_cast<double>(count);
    const double var = std::max(0.0, sum_sq[ch] / static_cast<double>(count) - mean * mean);
    stats.mean.push_back(mean);
    stats.std.push_back(std::sqrt(var));
  }
  return stats;
}

}  // namespace convkit::data
