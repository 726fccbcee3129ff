// Elementwise add of two static-int8 values, either of which may be kept as its byte codes:
// y[i] = clamp(a[i] + b[i], lo, hi) stored as QOutput says (q8_output.h: float32, snapped to the
// output's grid, or its codes). An operand kept as codes reads as (float)(code - shift) * scale -
// exactly the float32 grid point the value would otherwise hold - so the results are those of the
// float path on grid points (sum in float32, then snapped).
#pragma once
#include <cstdint>

#include "kernels/compute/q8_output.h"

namespace etnp {

struct Q8Operand {
  const uint8_t* codes = nullptr;  // the byte codes, or null: then `values`
  const float* values = nullptr;
  int32_t shift = 0;               // the code of 0 (zero point, + 128 for signed codes)
  float scale = 0.f;
};

// elements [begin, end) (the same indices in a, b and out)
void add_q8(const Q8Operand& a, const Q8Operand& b, float lo, float hi, const QOutput& out, int64_t begin, int64_t end);

// XNNPACK's static-int8 add, in fixed point: the output's grid index
// t = (rounding + am * ia + bm * ib) >> shift (arithmetic shift; rounding = 2^(shift - 1)), ia / ib
// the operands' grid indices (code - shift, or the float32 grid point over its scale, rounded:
// exact). Multipliers and shift from the scales (add_fixed_params: XNNPACK's, so results are the
// reference runtime's bit for bit); lo / hi and out's grid in grid units (its inv 1), t stored as
// store_q8_row stores it.
struct Q8AddFixed {
  int32_t am = 0, bm = 0, shift = 0;
};
// false where XNNPACK takes no such scales (a ratio to the output scale outside [2^-10, 2^8))
bool add_fixed_params(float a_scale, float b_scale, float out_scale, Q8AddFixed& p);
void add_q8_fixed(const Q8Operand& a, const Q8Operand& b, const Q8AddFixed& p, float lo, float hi, const QOutput& out,
                  int64_t begin, int64_t end);

}  // namespace etnp
