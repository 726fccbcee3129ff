// A fast 64-bit content hash (four independent multiply-rotate lanes over 8-byte words): what
// tells a changed or damaged file from the one read or written - the weight cache's sections and
// header (runtime/weight_cache.h), the program bytes a program gives back (runtime/program.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace etnp {

// A 64-bit hash of bytes, streamed in any pieces (the same value as one piece of them all);
// not cryptographic: it tells a changed or damaged file from the one written.
class ContentHash {
 public:
  ContentHash();
  void update(const void* p, size_t n);
  uint64_t value() const;
  static uint64_t of(const void* p, size_t n);

 private:
  uint64_t h_[4];
  uint8_t buf_[32];
  size_t nbuf_ = 0;
  uint64_t total_ = 0;
};

}  // namespace etnp
