// A FlatTensor (.ptd) data file: tensors a program keeps outside its .pte
// (`external_constants=True` exports), keyed by name. Layout (ExecuTorch 1.3.1,
// extension/flat_tensor/serialize): flatbuffer root offset, identifier "FT01", then an
// extended header "FH01" {u32 length, u64 flatbuffer offset, u64 flatbuffer size,
// u64 segment base offset, u64 segment data size}; FlatTensor{version, segments[{offset,
// size}], named_data[{key, segment_index, tensor_layout}]}. The bytes are owned (copied).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pte/flatbuffer.h"

namespace etnp {

class FlatTensorFile {
 public:
  // Parses and validates `size` bytes (copied); `label` names the file in errors.
  FlatTensorFile(const void* data, size_t size, std::string label);
  FlatTensorFile(const FlatTensorFile&) = delete;
  FlatTensorFile& operator=(const FlatTensorFile&) = delete;

  // The bytes stored under `key`, or nullptr (size 0) when the file has no such key.
  const uint8_t* find(const std::string& key, size_t* size) const;
  const std::string& label() const { return label_; }
  size_t num_keys() const { return entries_.size(); }
  size_t size() const { return bytes_.capacity(); }

 private:
  struct Entry {
    std::string key;
    size_t offset, size;  // in bytes_
  };
  std::vector<uint8_t> bytes_;
  std::string label_;
  std::vector<Entry> entries_;
};

}  // namespace etnp
