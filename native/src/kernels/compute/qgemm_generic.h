// The int8 GEMM's portable parts (qgemm.h): the scalar epilogue of one result, which the NEON
// rows share, and the portable rows, plain C++ written for the compiler's auto-vectoriser, on
// weights packed in columns (PackedQ8::columns: each panel column's Kp weights in a row).
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/compute/qgemm.h"
#include "util/fma_exact.h"

namespace etnp {

// The zero-point offset of uint8 codes (q + 128): 128 + zp, in wrapping int32 arithmetic as the
// vector paths' (a corrupt zero point is not undefined behaviour)
inline int32_t q8_code_offset(int32_t zp) { return (int32_t)((uint32_t)zp + 128u); }

// Float epilogue of one accumulator: (acc - (128 + za) * col_sum) * sa * sw + bias, clamped
// (rows_first: QActivations::scale_rows_first). With `prior` (QOutput::accumulate: C's value),
// added before the clamp.
inline float q8_finish(int32_t acc, int32_t offset, int32_t col_sum, float sa, float sw, float bias, float lo, float hi,
                       const float* prior, bool rows_first) {
  // (wrapping int32 arithmetic, as the vector paths': corrupt zero points are not undefined behaviour)
  const int32_t q = (int32_t)((uint32_t)acc - (uint32_t)offset * (uint32_t)col_sum);
  float v;
  if (rows_first) {
    const float t = (float)q * sa;
    v = fma_exact(t, sw, bias);  // (as the vector paths' FMA)
  } else {
    v = (float)q * (sa * sw) + bias;
  }
  if (prior) v += *prior;
  return std::min(std::max(v, lo), hi);
}

// w(k, n) at data[(n / 16 * 16 + n % 16) * Kp + k]: the portable rows' layout
inline int64_t q8_columns_index(int64_t Kp, int64_t k, int64_t n) { return n * Kp + k; }

// Rows [m0, m1) x panels [p0, p1) into `out` (row 0, column 0 of the product: results clamped,
// then snapped or written as codes in the epilogue, or added to C's values where
// out.accumulate), weights in the columns layout.
void q8_rows_columns(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                     const float* bias, float lo, float hi, const QOutput& out);

}  // namespace etnp
