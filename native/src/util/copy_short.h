// Short copies without a library call (im2col taps, concatenation runs of a few channels).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace etnp {

// A copy of `bytes` without a memcpy call below 64 bytes: two fixed-size moves that overlap in
// the middle, both loaded before either is stored (a grouped convolution's taps are 8 or 16
// channels: a byte loop a tap was 18% of a static-int8 RegNet call).
inline void copy_short(char* d, const char* s, size_t bytes) {
  auto two = [&](auto word) {
    using W = decltype(word);
    W a, b;
    std::memcpy(&a, s, sizeof(W));
    std::memcpy(&b, s + bytes - sizeof(W), sizeof(W));
    std::memcpy(d, &a, sizeof(W));
    std::memcpy(d + bytes - sizeof(W), &b, sizeof(W));
  };
  struct B16 { uint64_t lo, hi; };
  struct B32 { B16 lo, hi; };
  if (bytes >= 64) std::memcpy(d, s, bytes);
  else if (bytes >= 32) two(B32{});
  else if (bytes >= 16) two(B16{});
  else if (bytes >= 8) two(uint64_t{});
  else if (bytes >= 4) two(uint32_t{});
  else
    for (size_t t = 0; t < bytes; t++) d[t] = s[t];
}

}  // namespace etnp
