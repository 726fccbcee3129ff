// a * b + c rounded once to float, without the C library (whose fmaf is not correctly rounded
// everywhere: mingw-w64's is not). The product is exact in double; the sum, rounded to odd in
// double (TwoSum gives its rounding error), then rounded to float is correctly rounded
// (53 >= 2 * 24 + 2 bits). For the portable paths that must match hardware FMA to the bit.
// Branch-free integer and double arithmetic (no 64-bit integer compare either, which SSE2 lacks),
// so that a loop of them vectorises.
#pragma once
#include <cstdint>
#include <cstring>

namespace etnp {

namespace detail {
inline uint64_t nonzero_bit(uint64_t v) { return (v | (0 - v)) >> 63; }  // 1 where v != 0
}  // namespace detail

inline float fma_exact(float a, float b, float c) {
  const double p = (double)a * (double)b, s = p + (double)c;
  const double bb = s - p, e = (p - (s - bb)) + ((double)c - bb);  // s + e = p + c exactly (s finite)
  uint64_t sb, eb;
  std::memcpy(&sb, &s, 8);
  std::memcpy(&eb, &e, 8);
  // round to odd: where the sum is inexact (e != 0), s finite and s's last bit even, the neighbour
  // of s on e's side (one up in magnitude where e has s's sign, else one down)
  const uint64_t fix = detail::nonzero_bit(eb << 1) & detail::nonzero_bit(((sb >> 52) & 0x7ff) ^ 0x7ff) & ~sb & 1;
  const uint64_t opposite = (sb ^ eb) >> 63;
  sb += fix - ((fix & opposite) << 1);
  double r;
  std::memcpy(&r, &sb, 8);
  return (float)r;
}

}  // namespace etnp
