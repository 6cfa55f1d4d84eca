#pragma once
// The convolution layer sets of benchmarks/layer_sets.txt, parsed. One file
// holds them so that bench_conv, the report and the tests agree on every
// shape; the format is documented at the top of that file and in
// docs/benchmarks.md.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "convkit/backend/conv_desc.h"

namespace convkit::bench {

struct LayerEntry {
  std::string name;        // unique within its set
  Conv2dDesc desc;         // validated; 'same' padding already resolved
  std::int64_t count = 1;  // layers of this shape in the network
  int line = 0;            // where it was written, for messages
};

struct LayerSet {
  std::string name;
  std::string description;
  std::vector<LayerEntry> layers;
};

// Parses the text of a layer-set file. Every error throws convkit::Error
// naming `source`, the line and what was wrong with it.
std::vector<LayerSet> parse_layer_sets(std::string_view text, const std::string& source);
// Reads and parses a file.
std::vector<LayerSet> load_layer_sets(const std::string& path);
// benchmarks/layer_sets.txt of the source tree this binary was built from.
std::string default_layer_sets_path();

// The set called `name`; throws listing the known names when there is none.
const LayerSet& find_layer_set(const std::vector<LayerSet>& sets, std::string_view name);

// The reduced batch: N -> max(1, round(N * scale)), then at most max_batch
// (0: no cap). Keeps CPU and sim runs of the big sets small.
struct BatchScaling {
  double scale = 1.0;
  std::int64_t max_batch = 0;
  std::int64_t apply(std::int64_t n) const;
  Conv2dDesc apply(const Conv2dDesc& desc) const;
};

}  // namespace convkit::bench
