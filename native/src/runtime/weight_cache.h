// A program's packed-weight cache file (Runtime.load_program(..., weight_cache=...)): the packed
// weights its delegates made at method load, written after a load that packed them, mapped
// read-only on later loads (by any number of processes, which then share one resident copy) and
// viewed in place instead of packing again.
//
// File: a 64-byte header (magic, format version, the build's packing version, byte order and
// pointer size, the CPU path that shaped the packing, the sections' table offset, file size, a
// hash of header and table), then sections at 64-byte aligned offsets, then the table: per
// section its key (the delegate's identity: a hash of its blob and the named data it read, see
// xnn_weight_cache.h), offset, size and content hash. Nothing is trusted: a header, table or
// section that does not check out (bounds, hashes, versions, CPU path) is a miss, and the method
// load packs as it would without a cache, then writes a new file (a temporary beside it renamed
// over it: processes mapping the old file keep reading its pages; concurrent writers each write a
// whole file, the last rename wins).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "os/weight_file.h"
#include "util/content_hash.h"

namespace etnp {

// Writes a section's bytes (WeightCacheSession::add): the writer is called twice, first to
// measure and hash (nothing is written), then to write; both calls must give the same bytes.
class SectionWriter {
 public:
  void bytes(const void* p, size_t n);
  template <typename T>
  void put(T v) { bytes(&v, sizeof v); }
  void align(size_t a);  // zero bytes up to a multiple of A from the section's start (A <= 64)
  uint64_t size() const { return size_; }

 private:
  friend class WeightCacheSession;
  os::AtomicFileWriter* out_ = nullptr;  // null: measuring
  ContentHash* hash_ = nullptr;
  uint64_t size_ = 0;
};

// The CPU path that shapes packed layouts (ISA tier, VNNI; ETNP_CPU changes it), as a key.
uint64_t weight_cache_cpu_key();

// One method load's use of the cache file at a path.
class WeightCacheSession {
 public:
  explicit WeightCacheSession(std::string path);
  struct Section {
    const uint8_t* data = nullptr;
    size_t size = 0;
  };
  // KEY's section (its content hash checked), or {} (a miss).
  Section find(uint64_t key);
  // The mapping the found sections lie in (held by the delegates that view them).
  const std::shared_ptr<os::ReadOnlyMapping>& mapping() const { return map_; }
  // A section for KEY to write once the method has loaded (finish).
  void add(uint64_t key, std::function<void(SectionWriter&)> write);
  // Writes a new file if sections were added (with the old file's valid sections of other
  // keys): false when nothing was written (no need, or the file could not be written).
  bool finish() noexcept;
  // why the existing file was not used ("" when it was, or there was none)
  const std::string& rejected() const { return rejected_; }

 private:
  struct Entry {
    uint64_t key, offset, size, hash;
  };
  bool parse();
  std::string path_, rejected_;
  std::shared_ptr<os::ReadOnlyMapping> map_;
  std::vector<Entry> entries_;
  std::vector<int8_t> checked_;  // per entry: 0 unchecked, 1 good, -1 bad
  std::vector<std::pair<uint64_t, std::function<void(SectionWriter&)>>> added_;
};

}  // namespace etnp
