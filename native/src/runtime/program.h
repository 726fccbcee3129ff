// Program: the loaded .pte file (owned bytes, or a private mmap when asked for), its extended header,
// the Program flatbuffer root and its segments.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pte/flat_tensor.h"
#include "pte/flatbuffer.h"

namespace etnp {

class Runtime;
namespace os { class FileMapping; class FileBytes; }

struct Span {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// SPANS sorted and joined where at most GAP bytes lie between them (segment padding).
std::vector<Span> merge_nearby(std::vector<Span> spans, size_t gap);

class Program {
 public:
  static constexpr size_t kReadAtOnce = (size_t)1 << 20;  // (a file up to this size is read whole)
  // Reads the file (a private copy: past its first kReadAtOnce bytes and its flatbuffer, as the
  // bytes are needed - ensure, borrow -, the file kept open meanwhile), or maps it when `map` is
  // set (see os/file_source.h).
  static std::shared_ptr<Program> from_file(std::shared_ptr<Runtime> rt, const std::string& path, bool map = false);
  static std::shared_ptr<Program> from_bytes(std::shared_ptr<Runtime> rt, const void* data, size_t size);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const std::vector<std::string>& method_names() const { return method_names_; }
  fb::Table plan(const std::string& name) const;  // throws if absent
  const fb::Table& root() const { return root_; }
  // The whole file as loaded (every released range read back first: ProgramLoadError when the
  // file changed since)
  Span bytes() const;
  Span bytes_unchecked() const { return {file_, file_size_}; }  // (where they lie; released ranges not read back)
  // Bytes of the file the program holds (its copy or mapping, less what it gave back; a mapping's
  // pages count whether touched or not) and of its data files' copies (etnp_method_memory_stats)
  uint64_t resident_bytes() const;
  uint64_t data_file_bytes() const;
  Runtime& runtime() const { return *runtime_; }
  const std::shared_ptr<Runtime>& runtime_ptr() const { return runtime_; }

  // Segment `index` of the file, bounds-checked; READ false: its bytes perhaps given back (the
  // caller ensures the parts it reads, as a delegate does around packing).
  Span segment(uint32_t index, bool read = true) const;
  // Inline delegate data `index` (Program.backend_delegate_data).
  Span inline_delegate_data(uint32_t index) const;
  // The data for a named key: the program's own named_data, else the data files added
  // (external .ptd weights), or an empty span.
  Span named_data(const std::string& key, bool read = true) const;
  // Adds an external data file (.ptd) whose keys named_data resolves; before methods load.
  void add_data_file(std::shared_ptr<const FlatTensorFile> f) { data_files_.push_back(std::move(f)); }
  // The packed-weight cache file methods loaded from now on use ("": none; runtime/weight_cache.h).
  void set_weight_cache(std::string path) {
    std::lock_guard<std::mutex> lock(release_mu_);
    weight_cache_ = std::move(path);
  }
  std::string weight_cache() const {
    std::lock_guard<std::mutex> lock(release_mu_);
    return weight_cache_;
  }
  // " (data files: a.ptd, b.ptd)" or " (no data files were given)", for error messages.
  std::string data_files_note() const;
  // Constant tensor `buffer_idx` of `nbytes` (constant_segment or inline constant_buffer).
  Span constant(uint32_t buffer_idx, size_t nbytes) const;
  // Initial data of a mutable (planned) tensor, or an empty span; `segment_list` is the
  // tensor's ExtraTensorInfo.mutable_data_segments_idx (0 when absent).
  Span mutable_data(uint32_t buffer_idx, size_t nbytes, uint64_t segment_list = 0) const;

  // Program bytes that only fed a delegate's packing (its blob, the named data it copied) are
  // given back to the OS (release: the whole pages inside S not already given back, unless a
  // loaded method's tensor reads them - protect); a delegate gives back each filter's bytes once
  // packed, the method the rest once loaded. Every accessor above reads released ranges back
  // before handing them out (ensure): from the file, which must be the one loaded (same identity,
  // same content hash), else ProgramLoadError; a mapping's pages come back from the file by
  // themselves, unchecked (what mmap=True promises: a file rewritten in place changes what is
  // read). Programs loaded from bytes keep all theirs (nothing to read back from).
  // ETNP_RELEASE_PROGRAM_BYTES=off keeps every program's.
  void release(Span s) const;
  void protect(Span s) const;
  void unprotect(Span s) const;  // takes back one protect(S) of the same span
  // Whether the bytes are a private copy of a file (not a mapping, not bytes given to from_bytes):
  // then what release gives back is memory of this process alone.
  bool reads_file_copy() const { return read_ != nullptr; }
  void ensure(Span s) const;
  // S's bytes for a packer that reads them once (a filter): where part of S was not read from
  // the file yet, a copy in ROOM() (called then only: room for S.size bytes), read from the file
  // without making S resident; else S's own bytes, ensured.
  const uint8_t* borrow(Span s, const std::function<uint8_t*()>& room) const;
  uint64_t released_bytes() const;
 private:
  Program() = default;
  void parse();

  std::shared_ptr<Runtime> runtime_;
  std::vector<uint8_t> owned_;           // a copy of bytes given to from_bytes
  std::unique_ptr<os::FileBytes> read_;  // a file read into memory
  std::unique_ptr<os::FileMapping> map_;
  std::string path_;                     // the file read or mapped ("" for bytes)
  std::string weight_cache_;             // set_weight_cache
  // A range of the file's copy not in memory: given back after packing (hash: of the bytes given
  // back; a copy's - a mapping reads its pages back unchecked), or not read yet (unread: a file
  // read in part, os::FileBytes::fill reads it in)
  struct Released {
    size_t offset, size;  // in the file, whole pages (an unread range: to the file's end)
    uint64_t hash;
    bool unread = false;
  };

  mutable std::mutex release_mu_;
  mutable std::vector<Released> released_;
  mutable std::vector<std::pair<size_t, size_t>> protected_;  // [begin, end) offsets
  mutable std::atomic<bool> any_released_{false};
  void read_back(const Released& r) const;
  [[noreturn]] void throw_changed(const Released& r) const;
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
