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

}  // namespace etnp
