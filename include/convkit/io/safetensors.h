#pragma once
// safetensors (https://github.com/huggingface/safetensors) import and export,
// the format PyTorch, JAX and the Hugging Face hub share:
//   8 bytes   little-endian u64 N, the header length
//   N bytes   JSON header: {"name": {"dtype": "F32", "shape": [2, 3],
//             "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}
//             (padded with spaces so the data starts 8-byte aligned)
//   the rest  the data buffer; offsets are relative to its start, each tensor
//             row-major little-endian, tensors packed with no gaps or overlaps
// dtypes: F32 <-> float32, F64 <-> float64, I64 <-> int64.
//
// Names are state_dict names, which are PyTorch's ("0.weight",
// "layer1.0.bn1.running_mean"), so an equivalent torch model's file loads with
//   model->load_state_dict(io::load_safetensors(path).tensors);
// (docs/io.md has the mapping, including what Keras names differently).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "convkit/nn/state_dict.h"

namespace convkit::io {

struct SafetensorsFile {
  StateDict tensors;  // in data-offset order (the order they were written), on the cpu
  std::map<std::string, std::string> metadata;  // "__metadata__"; string values only
};

// The file's bytes. Tensors are written in the order given (any device;
// copied to the cpu). Throws Error on an empty or duplicate name or the
// reserved name "__metadata__".
std::vector<std::uint8_t> safetensors_bytes(const StateDict& tensors,
                                            const std::map<std::string, std::string>& metadata = {});
// Parses and validates: header length within the file, well-formed JSON,
// known dtypes, non-negative shapes, each tensor's byte range matching its
// shape and dtype, ranges inside the buffer, contiguous from 0 without
// overlaps, and covering the whole buffer. Errors name `source` (a file name
// in messages) and, for the header, the byte offset.
SafetensorsFile parse_safetensors(const std::vector<std::uint8_t>& bytes,
                                  const std::string& source = "<memory>");

// Writes atomically, as save_checkpoint.
void save_safetensors(const std::string& path, const StateDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace convkit::io
