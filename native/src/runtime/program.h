// Program: the loaded .pte file (owned bytes, or a private mmap when asked for), its extended header,
// the Program flatbuffer root and its segments.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pte/flat_tensor.h"
#include "pte/flatbuffer.h"

namespace etnp {

class Runtime;
namespace os { class FileMapping; }

struct Span {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

class Program {
 public:
  // Reads the file (a private copy), or maps it when `map` is set (see os/file_source.h).
  static std::shared_ptr<Program> from_file(std::shared_ptr<Runtime> rt, const std::string& path, bool map = false);
  static std::shared_ptr<Program> from_bytes(std::shared_ptr<Runtime> rt, const void* data, size_t size);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const std::vector<std::string>& method_names() const { return method_names_; }
  fb::Table plan(const std::string& name) const;  // throws if absent
  const fb::Table& root() const { return root_; }
  Span bytes() const { return {file_, file_size_}; }  // the whole file as loaded
  // Bytes of the file the program holds in memory (its copy; a mapping's resident pages where the
  // OS says, else 0) and of its data files' copies (etnp_method_memory_stats)
  uint64_t resident_bytes() const;
  uint64_t data_file_bytes() const;
  Runtime& runtime() const { return *runtime_; }
  const std::shared_ptr<Runtime>& runtime_ptr() const { return runtime_; }

  // Segment `index` of the file, bounds-checked.
  Span segment(uint32_t index) const;
  // Inline delegate data `index` (Program.backend_delegate_data).
  Span inline_delegate_data(uint32_t index) const;
  // The data for a named key: the program's own named_data, else the data files added
  // (external .ptd weights), or an empty span.
  Span named_data(const std::string& key) const;
  // Adds an external data file (.ptd) whose keys named_data resolves; before methods load.
  void add_data_file(std::shared_ptr<const FlatTensorFile> f) { data_files_.push_back(std::move(f)); }
  // " (data files: a.ptd, b.ptd)" or " (no data files were given)", for error messages.
  std::string data_files_note() const;
  // Constant tensor `buffer_idx` of `nbytes` (constant_segment or inline constant_buffer).
  Span constant(uint32_t buffer_idx, size_t nbytes) const;
  // Initial data of a mutable (planned) tensor, or an empty span; `segment_list` is the
  // tensor's ExtraTensorInfo.mutable_data_segments_idx (0 when absent).
  Span mutable_data(uint32_t buffer_idx, size_t nbytes, uint64_t segment_list = 0) const;

 private:
  Program() = default;
  void parse();

  std::shared_ptr<Runtime> runtime_;
  std::vector<uint8_t> owned_;
  std::unique_ptr<os::FileMapping> map_;
  const uint8_t* file_ = nullptr;
  size_t file_size_ = 0;
  fb::Buffer fbuf_;
  fb::Table root_;
  uint64_t segment_base_ = 0;
  std::vector<Span> segments_;
  std::vector<std::string> method_names_;
  std::vector<std::shared_ptr<const FlatTensorFile>> data_files_;
};

}  // namespace etnp
