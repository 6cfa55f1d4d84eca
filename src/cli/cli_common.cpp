#include "cli/cli_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "convkit/backend/backend.h"
#include "convkit/backend/conv_desc.h"
#include "convkit/backend/precision.h"
#include "convkit/core/error.h"
#include "convkit/data/cifar.h"
#include "convkit/data/data_loader.h"
#include "convkit/data/idx.h"
#include "convkit/data/image_folder.h"
#include "convkit/ops/conv_algo.h"
#include "convkit/optim/adam.h"
#include "convkit/optim/rmsprop.h"
#include "convkit/optim/sgd.h"
#include "io/json.h"

namespace convkit::cli {

namespace fs = std::filesystem;

DataSpec parse_data_spec(const std::string& text) {
  DataSpec spec;
  spec.text = text;
  const std::size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string root = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "fashion-mnist") {
    spec.kind = DataSpec::Kind::fashion_mnist;
    spec.root = root.empty() ? data::kFashionMNISTDefaultRoot : root;
  } else if (kind == "cifar10") {
    spec.kind = DataSpec::Kind::cifar10;
    spec.root = root;
  } else if (kind == "folder") {
    spec.kind = DataSpec::Kind::folder;
    spec.root = root;
  } else {
    CK_FAIL("--data: unknown data set '", text,
            "' (expected fashion-mnist, fashion-mnist:DIR, cifar10:DIR or folder:DIR)");
  }
  CK_CHECK(!spec.root.empty(), "--data ", text, ": needs a directory, e.g. ", kind, ":/path/to/data");
  CK_CHECK(fs::is_directory(spec.root), "--data ", text, ": '", spec.root,
           "' is not a directory");
  return spec;
}

namespace {

std::vector<std::string> class_names_of(const data::Dataset& d) {
  std::vector<std::string> names = d.class_names();
  if (names.empty())
    for (std::int64_t i = 0; i < d.num_classes(); ++i) names.push_back(std::to_string(i));
  return names;
}

DataSplits load_folder(const DataSpec& spec, std::uint64_t seed) {
  const fs::path root(spec.root);
  DataSplits out;
  std::string test_dir;
  for (const char* name : {"test", "validation", "val"})
    if (fs::is_directory(root / name)) {
      test_dir = (root / name).string();
      break;
    }
  if (fs::is_directory(root / "train") && !test_dir.empty()) {
    auto train = std::make_shared<data::ImageFolder>((root / "train").string());
    auto test = std::make_shared<data::ImageFolder>(test_dir);
    CK_CHECK(train->class_names() == test->class_names(), "--data ", spec.text,
             ": the class folders of '", (root / "train").string(), "' and '", test_dir,
             "' differ");
    out.train = train;
    out.test = test;
  } else {
    auto all = std::make_shared<data::ImageFolder>(spec.root);
    CK_CHECK(all->size() >= 2, "--data ", spec.text, ": found ", all->size(),
             " images; need at least 2 to split into train and test");
    const std::vector<std::int64_t> order = data::epoch_order(all->size(), true, seed, 0);
    const auto n_test = std::max<std::int64_t>(1, all->size() / 5);
    std::vector<std::int64_t> test_idx(order.begin(), order.begin() + n_test);
    std::vector<std::int64_t> train_idx(order.begin() + n_test, order.end());
    out.train = std::make_shared<data::Subset>(all, train_idx);
    out.test = std::make_shared<data::Subset>(all, test_idx);
  }
  CK_CHECK(out.train->num_classes() >= 2, "--data ", spec.text, ": found ",
           out.train->num_classes(), " class folder(s); need at least 2");
  CK_CHECK(out.train->size() > 0, "--data ", spec.text, ": no training images");
  return out;
}

}  // namespace

DataSplits load_data(const DataSpec& spec, std::uint64_t seed) {
  DataSplits out;
  switch (spec.kind) {
    case DataSpec::Kind::fashion_mnist:
      out.train = std::make_shared<data::FashionMNIST>(spec.root, data::Split::train);
      out.test = std::make_shared<data::FashionMNIST>(spec.root, data::Split::test);
      break;
    case DataSpec::Kind::cifar10:
      out.train = std::make_shared<data::CIFAR10>(spec.root, data::Split::train);
      out.test = std::make_shared<data::CIFAR10>(spec.root, data::Split::test);
      break;
    case DataSpec::Kind::folder:
      out = load_folder(spec, seed);
      break;
  }
  out.class_names = class_names_of(*out.train);
  return out;
}

data::Preprocessing model_preprocessing(const Shape& input_shape) {
  CK_CHECK(input_shape.rank() == 3, "model input shape must be [C, H, W], got ", input_shape);
  return data::Preprocessing::identity()
      .channels(input_shape[0])
      .resize(input_shape[1], input_shape[2])
      .rescale(1.0 / 255);
}

data::Augmentation default_augmentation(DataSpec::Kind kind) {
  data::Augmentation a;
  switch (kind) {
    case DataSpec::Kind::fashion_mnist:
      // Garments sit centred on black: small shifts, mirror images, black fill.
      a.width_shift_range = a.height_shift_range = 0.1;
      a.horizontal_flip = true;
      a.fill_mode = data::FillMode::constant;
      a.cval = 0;
      break;
    case DataSpec::Kind::cifar10:
      // Keras' cifar10_cnn example.
      a.width_shift_range = a.height_shift_range = 0.1;
      a.horizontal_flip = true;
      break;
    case DataSpec::Kind::folder:
      // Keras' "building powerful image classification models" (cats vs dogs).
      a.rotation_range = 40;
      a.width_shift_range = a.height_shift_range = 0.2;
      a.shear_range = 0.2;
      a.zoom_range = data::Augmentation::zoom(0.2);
      a.horizontal_flip = true;
      break;
  }
  return a;
}

Device parse_device_arg(const std::string& text) {
  Device device;
  try {
    device = Device::parse(text);
  } catch (const Error&) {
    CK_FAIL("--device: unknown device '", text, "' (expected cpu, sim, cuda or cuda:N)");
  }
  backend_for(device);  // throws, saying why, when it cannot run here
  return device;
}

void apply_algo_arg(const std::string& text) {
  ConvAlgo algo;
  try {
    algo = parse_conv_algo(text);
  } catch (const Error&) {
    CK_FAIL("--algo: unknown algorithm '", text, "' (expected one of: ", conv_algo_names(true), ")");
  }
  set_default_conv_algo(algo);
}

std::string apply_float32_precision_arg(const std::optional<std::string>& text) {
  if (!text) return to_string(float32_precision());
  try {
    set_float32_precision(parse_float32_precision(*text));
  } catch (const Error&) {
    CK_FAIL("--float32-precision: unknown precision '", *text, "' (expected highest, high or medium)");
  }
  return *text;
}

std::string with_algo_names(std::string_view usage) {
  std::string text(usage);
  const std::string_view placeholder = "{algos}";
  const std::size_t at = text.find(placeholder);
  if (at != std::string::npos) text.replace(at, placeholder.size(), conv_algo_names(true));
  return text;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, std::vector<Tensor> params,
                                                 double lr) {
  if (name == "sgd")
    return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions(lr).momentum(0.9));
  if (name == "adam") return std::make_unique<optim::Adam>(std::move(params), optim::AdamOptions(lr));
  if (name == "adamw")
    return std::make_unique<optim::AdamW>(std::move(params), optim::AdamWOptions(lr));
  if (name == "rmsprop")
    return std::make_unique<optim::RMSprop>(std::move(params), optim::RMSpropOptions(lr));
  CK_FAIL("--optimizer: unknown optimizer '", name, "' (expected sgd, adam, adamw or rmsprop)");
}

double default_learning_rate(const std::string& optimizer) {
  if (optimizer == "sgd") return 0.01;
  if (optimizer == "adam" || optimizer == "adamw" || optimizer == "rmsprop") return 1e-3;
  CK_FAIL("--optimizer: unknown optimizer '", optimizer, "' (expected sgd, adam, adamw or rmsprop)");
}

std::string json_string(const std::string& text) { return io::json::quote(text); }

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", value);
  return buf;
}

void JsonLine::key(const std::string& k) {
  if (!body_.empty()) body_ += ", ";
  body_ += json_string(k);
  body_ += ": ";
}

JsonLine& JsonLine::add(const std::string& k, const std::string& value) {
  key(k);
  body_ += json_string(value);
  return *this;
}
JsonLine& JsonLine::add(const std::string& k, double value) {
  key(k);
  body_ += json_number(value);
  return *this;
}
JsonLine& JsonLine::add(const std::string& k, std::int64_t value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}
JsonLine& JsonLine::add(const std::string& k, bool value) {
  key(k);
  body_ += value ? "true" : "false";
  return *this;
}
JsonLine& JsonLine::add_raw(const std::string& k, const std::string& json) {
  key(k);
  body_ += json;
  return *this;
}

int workers_arg(const ParsedArgs& p) {
  const std::int64_t asked = p.int_or("workers", 1, 0);
  const std::int64_t cap = std::max<std::int64_t>(4, 2 * std::int64_t{std::thread::hardware_concurrency()});
  if (asked <= cap) return static_cast<int>(asked);
  std::fprintf(stderr, "convkit %s: --workers %lld is more than twice the %u hardware threads; using %lld\n",
               p.command().c_str(), static_cast<long long>(asked), std::thread::hardware_concurrency(),
               static_cast<long long>(cap));
  return static_cast<int>(cap);
}

void create_output_dir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  CK_CHECK(!ec, "cannot create the --out directory '", path, "': ", ec.message());
}

std::string join_lines(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += '\n';
    out += items[i];
  }
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t nl = text.find('\n', start);
    out.push_back(text.substr(start, nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

}  // namespace convkit::cli
