// Dynamic int8 quantization of one row (XNNPACK's qd8 activations), in float32 as XNNPACK's
// f32 -> qd8 convert computes it. The row's parameters (qd8_params, from its min and max) are
// XNNPACK's xnn_qd8_asymmetric_quantization_params: the range [min(0, mn), max(0, mx)], the
// multiplier m = 255 / (max - min), the zero point from the end whose error is smaller, rounded
// to nearest even; the dequantization scale is 1 / m (rounded: not (max - min) / 255).
// quantize_row_q8: q[i] = clamp(round_half_even(x[i] * m), -128 - zp, 127 - zp) with x[i] * m
// rounded to float first (XNNPACK's f32-qs8-vcvt). Writes the grid point q * scale as float (NaN
// stays NaN; grid may be x) and q + zp + 128 as uint8 (NaN gives 0). AVX-512 and AVX2 paths give
// the same results as the portable one.
#pragma once
#include <cstdint>

namespace etnp {

struct Qd8Params {
  float mult = 1.f;   // x -> x * mult, then rounded: the quantization multiplier
  float scale = 1.f;  // 1 / mult: (q - zp) * scale is the value
  int32_t zp = 0;     // in [-128, 127]
};
Qd8Params qd8_params(float mn, float mx);

void quantize_row_q8(const float* x, int64_t n, const Qd8Params& p, float* grid, uint8_t* u8);

// mn = min(mn, x[i]), mx = max(mx, x[i]) over the row; NaN elements are passed over.
void row_min_max(const float* x, int64_t n, float& mn, float& mx);

// A per-tensor int8 grid that float32 values are kept on (static-int8 values): x becomes t * scale,
// t = clamp(x * inv, lo, hi) rounded to nearest even (lo, hi: qmin - zp, qmax - zp); NaN stays NaN.
// Rounding by adding and subtracting 1.5 * 2^23 (exact for |t| < 2^22): loops of it vectorise.
struct Int8Grid {
  float inv, lo, hi, scale;
};
inline float snap_to_grid(float x, const Int8Grid& g) {
  float t = x * g.inv;
  t = t < g.lo ? g.lo : t;
  t = t > g.hi ? g.hi : t;
  t = (t + 12582912.f) - 12582912.f;
  return t * g.scale;
}
// The byte code of x on grid g: t + shift, t x's index on the grid as snap_to_grid rounds it, a
// NaN giving t = g.lo; clamped to [0, 255] (shift = zero point, + 128 for signed codes: the codes
// float_to_codes gives for the snapped value).
inline uint8_t grid_code(float x, const Int8Grid& g, int32_t shift) {
  float t = x * g.inv;
  t = t >= g.lo ? t : g.lo;
  t = t > g.hi ? g.hi : t;
  t = (t + 12582912.f) - 12582912.f;
  const float c = t + (float)shift;
  return (uint8_t)(c < 0.f ? 0.f : c > 255.f ? 255.f : c);
}
// y = snapped x (vectorised on AVX2, and by the compiler elsewhere; the same results as the scalar formula)
void snap_to_grid(const Int8Grid& g, const float* x, float* y, int64_t n);
// codes[i] = grid_code(x[i], g, shift), as a loop the compiler vectorises
void grid_codes(const Int8Grid& g, int32_t shift, const float* x, uint8_t* codes, int64_t n);
inline void snap_to_grid(const Int8Grid& g, float* d, int64_t n) { snap_to_grid(g, d, d, n); }

// y[i] = (codes[i] - shift) * scale: the grid points of byte codes (vectorised on AVX2, and by the
// compiler elsewhere; the same results)
void codes_to_floats(const uint8_t* codes, int64_t n, int32_t shift, float scale, float* y);

// y[i] = table[index of x[i] on grid g]: x[i] = t * g.scale (t in [g.lo, g.hi], an integer) reads
// table[t - g.lo], NaN reads table[256]. A function of a value on an int8 grid has 256 results:
// computed once into the table, the function becomes a lookup (x must lie on the grid).
void grid_table_lookup(const Int8Grid& g, const float* table, const float* x, float* y, int64_t n);

// codes[i] = clamp(round_half_even(x[i] * inv + shift), 0, 255), NaN -> 0: the byte codes of
// values on a per-tensor int8 grid (shift = zero point, + 128 for signed codes).
void float_to_codes(const float* x, int64_t n, float inv, float shift, uint8_t* codes);

}  // namespace etnp
