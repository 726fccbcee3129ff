// a * b + c rounded once to float, without the C library (whose fmaf is not correctly rounded
// everywhere: mingw-w64's is not). The product is exact in double; the sum, rounded to odd in
// double (TwoSum gives its rounding error), then rounded to float is correctly rounded
// (53 >= 2 * 24 + 2 bits). For the portable paths that must match hardware FMA to the bit.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace etnp {

inline float fma_exact(float a, float b, float c) {
  const double p = (double)a * (double)b, s = p + (double)c;
  if (!std::isfinite(s)) return (float)s;
  const double bb = s - p, e = (p - (s - bb)) + ((double)c - bb);
  uint64_t bits;
  std::memcpy(&bits, &s, 8);
  if (e == 0 || (bits & 1)) return (float)s;  // exact, or already odd
  return (float)std::nextafter(s, e > 0 ? INFINITY : -INFINITY);
}

}  // namespace etnp
