// PlannedBuffer: one of a method's planned memory buffers (ExecutionPlan.non_const_buffer_sizes),
// zeroed and 64-byte aligned. A large one is whole pages from the OS that become resident only
// when written (os::map_zero_pages): the positions of a KV cache that a call has not reached yet
// and any planned bytes no call writes cost no memory - in each of N worker processes. Putting it
// back to zeros (reset) gives its pages back instead of writing them. Small buffers, and every
// buffer in a sanitizer build (which watches heap blocks), are calloc'ed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "os/pages.h"
#include "util/compiler.h"

namespace etnp {

class PlannedBuffer {
 public:
  // From this size on a buffer is mapped pages (FloatBuffer's threshold as well).
  static constexpr size_t kMapped = size_t(1) << 20;

  // BYTES of zeros; data() is null when the memory cannot be had.
  explicit PlannedBuffer(size_t bytes) : bytes_(bytes) {
#if !defined(ETNP_SANITIZED)
    if (bytes >= kMapped) {
      mem_ = (uint8_t*)os::map_zero_pages(bytes);
      mapped_ = mem_ != nullptr;
      if (mapped_) return;
    }
#endif
    // calloc: zeroed pages are mapped lazily, so a huge (corrupt) plan costs nothing until used
    mem_ = (uint8_t*)std::calloc(bytes + 64, 1);
  }
  ~PlannedBuffer() {
    if (mapped_) os::unmap_pages(mem_, bytes_);
    else std::free(mem_);
  }
  PlannedBuffer(const PlannedBuffer&) = delete;
  PlannedBuffer& operator=(const PlannedBuffer&) = delete;

  // The first byte (64-byte aligned).
  uint8_t* data() const { return mem_ ? (uint8_t*)(((uintptr_t)mem_ + 63) & ~(uintptr_t)63) : nullptr; }
  size_t size() const { return bytes_; }
  // Back to zeros (mapped: its pages given back, non-resident until written again).
  void zero() {
    if (mapped_) os::zero_pages(mem_, bytes_);
    else std::memset(data(), 0, bytes_);
  }

 private:
  uint8_t* mem_ = nullptr;
  size_t bytes_ = 0;
  bool mapped_ = false;
};

}  // namespace etnp
