#pragma once
// Pieces the training commands share: the --data, --device, --algo and
// --optimizer arguments, the preprocessing and augmentation a model is
// trained with, and a one-line JSON writer for --json.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/arg_parser.h"
#include "convkit/core/device.h"
#include "convkit/core/shape.h"
#include "convkit/core/tensor.h"
#include "convkit/data/augmentation.h"
#include "convkit/data/dataset.h"
#include "convkit/data/preprocessing.h"
#include "convkit/optim/optimizer.h"

namespace convkit::cli {

// --data fashion-mnist[:DIR] | cifar10:DIR | folder:DIR
struct DataSpec {
  enum class Kind { fashion_mnist, cifar10, folder };
  Kind kind = Kind::fashion_mnist;
  std::string root;
  std::string text;  // as given
};
DataSpec parse_data_spec(const std::string& text);

struct DataSplits {
  std::shared_ptr<const data::Dataset> train, test;
  std::vector<std::string> class_names;
};
// The train and test splits. An image folder with train/ and test/ (or
// validation/) subfolders uses them; any other folder is split 80/20 by a
// shuffle keyed by `seed`.
DataSplits load_data(const DataSpec& spec, std::uint64_t seed);

// What every zoo model is trained with: convert to the model's channels,
// resize to its input size (no-ops on data that already fits), rescale to
// [0, 1]. Stored in checkpoints, so predict applies the same to any image.
data::Preprocessing model_preprocessing(const Shape& input_shape);
// --augment: Keras-style random shifts (and flips, zoom, rotation and shear for
// photos) suited to each data set.
data::Augmentation default_augmentation(DataSpec::Kind kind);

// Parses --device and checks that its backend can run here.
Device parse_device_arg(const std::string& text);
// Parses --algo and makes it the default for every convolution.
void apply_algo_arg(const std::string& text);
// Sets --float32-precision (highest, high or medium; convkit/backend/precision.h)
// when given, and returns the precision the run takes (the environment's
// when not given).
std::string apply_float32_precision_arg(const std::optional<std::string>& text);
// A usage text with its "{algos}" replaced by the valid --algo names
// (convkit/conv/algorithms.h), automatic first.
std::string with_algo_names(std::string_view usage);

// sgd (momentum 0.9), adam, adamw, rmsprop over `params`.
std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, std::vector<Tensor> params,
                                                 double lr);
// Throws Error for an unknown optimizer name.
double default_learning_rate(const std::string& optimizer);

// Builds {"key": value, ...} on one line.
class JsonLine {
 public:
  JsonLine& add(const std::string& key, const std::string& value);
  JsonLine& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonLine& add(const std::string& key, double value);
  JsonLine& add(const std::string& key, std::int64_t value);
  JsonLine& add(const std::string& key, int value) { return add(key, std::int64_t{value}); }
  JsonLine& add(const std::string& key, bool value);
  // A value already in JSON form (an array or object).
  JsonLine& add_raw(const std::string& key, const std::string& json);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& k);
  std::string body_;
};
std::string json_string(const std::string& text);  // quoted and escaped
std::string json_number(double value);             // null for nan / inf

// --workers (default 1). A loader worker is a thread; more of them than
// twice the hardware threads (and at least 4) only add contention and memory,
// so a larger request is capped there with a warning on stderr.
int workers_arg(const ParsedArgs& p);

// Creates the --out directory `path` (and its parents), or throws Error
// naming it and the system's reason.
void create_output_dir(const std::string& path);

// Joins and splits the class names a checkpoint stores as metadata "classes".
std::string join_lines(const std::vector<std::string>& items);
std::vector<std::string> split_lines(const std::string& text);

}  // namespace convkit::cli
