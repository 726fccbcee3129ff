// Scalar operations for the portable kernels, written so that a loop of them vectorises (GCC,
// Clang and MSVC auto-vectorisers; SSE2, WASM SIMD128, NEON, RVV): selects as bit blends, not
// branches (GCC's if-conversion gives up on chains of conditionals and on std::min / std::max,
// which select a reference: "control flow in loop").
#pragma once
#include <cstdint>
#include <cstring>

namespace etnp {

inline uint32_t float_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// m ? a : b
inline float select_f32(bool m, float a, float b) {
  const uint32_t k = 0u - (uint32_t)m;
  return bits_float((float_bits(a) & k) | (float_bits(b) & ~k));
}

// The SIMD min / max: b where either is NaN (as minps / maxps, and std::min / std::max with b first)
inline float min_f32(float a, float b) { return select_f32(a < b, a, b); }
inline float max_f32(float a, float b) { return select_f32(a > b, a, b); }

// std::min(std::max(v, lo), hi): a NaN v stays NaN
inline float clamp_f32(float v, float lo, float hi) {
  const float t = select_f32(v < lo, lo, v);
  return select_f32(hi < t, hi, t);
}

// std::nearbyint for |x| < 2^22 (round half to even; -0 for (-0.5, 0]; NaN stays NaN): by adding
// and subtracting 1.5 * 2^23 (SSE2 has no rounding instruction), the sign copied back
inline float nearbyint_f32(float x) {
  const float r = (x + 12582912.f) - 12582912.f;
  return bits_float((float_bits(r) & 0x7fffffffu) | (float_bits(x) & 0x80000000u));
}

}  // namespace etnp
