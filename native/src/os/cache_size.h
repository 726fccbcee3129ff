// The size of the CPU's last-level cache, for choosing how kernels read weights that stream from
// memory (delegates/backend.h: DelegateHandle::set_weights_stream). POSIX (Linux, macOS) in
// cache_size_posix.cpp, Windows in cache_size_win32.cpp.
#pragma once
#include <cstdint>

namespace etnp::os {

// Bytes of the largest cache level this CPU reports (L3 on most x86 and server Arm parts, L2
// where there is no L3); 0 when the system does not say (asked each time: the per-OS part).
int64_t query_last_level_cache_bytes();

// The same, asked once.
inline int64_t last_level_cache_bytes() {
  static const int64_t bytes = query_last_level_cache_bytes();
  return bytes;
}

}  // namespace etnp::os
