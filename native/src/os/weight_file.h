// The file operations of a weight cache (runtime/weight_cache.h): a read-only shared mapping of
// a cache file (its pages are the page cache's: every process mapping the file shares them), and
// writing one atomically (a temporary file beside it, renamed over it: a process mapping the old
// file keeps its pages; a reader never sees a partly written file). Neither throws. (A process
// killed while writing leaves its temporary, PATH.tmp.*, behind. On Windows a file some process
// has mapped cannot be replaced: the rename fails, and the caller goes on without writing.)
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace etnp::os {

class ReadOnlyMapping {
 public:
  // The regular file at PATH mapped read-only, or nullptr (absent, not a regular file, empty,
  // or the OS refused).
  static std::shared_ptr<ReadOnlyMapping> open(const std::string& path) noexcept;
  ~ReadOnlyMapping();
  ReadOnlyMapping(const ReadOnlyMapping&) = delete;
  ReadOnlyMapping& operator=(const ReadOnlyMapping&) = delete;
  const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
  size_t size() const { return size_; }

 private:
  ReadOnlyMapping() = default;
  void* addr_ = nullptr;
  size_t size_ = 0;
};

// Writes a new file at PATH: open() creates a uniquely named temporary beside it, write()
// appends, commit() flushes it and renames it over PATH. Destroyed uncommitted (or on any
// failure) it removes the temporary. Each call returns false once something failed.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path) : path_(std::move(path)) {}
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  bool open() noexcept;
  bool write(const void* p, size_t n) noexcept;
  bool commit() noexcept;

 private:
  void discard() noexcept;
  std::string path_, tmp_;
  intptr_t fd_ = -1;  // (a POSIX descriptor or a Windows HANDLE)
  bool failed_ = false;
};

}  // namespace etnp::os
