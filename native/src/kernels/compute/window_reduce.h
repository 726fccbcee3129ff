// Pooling windows over NHWC: an output pixel's C channels reduced over the input pixels (taps)
// its window covers, each tap a row of C floats.
#pragma once
#include <cstdint>

namespace etnp {

// y[c] = max over taps of x[t][c], starting from -inf, a NaN element passed over (y stays what
// the other taps give: -inf when all are NaN) - the order of taps does not matter.
void window_max(const float* const* x, int64_t taps, int64_t C, float* y);

// The same on byte codes (uint8, starting from 0): the max of the codes of values on one int8 grid
// is the code of their max.
void window_max_u8(const uint8_t* const* x, int64_t taps, int64_t C, uint8_t* y);

// y[c] = (x[0][c] + x[1][c] + ... ) / divisor, added in tap order from 0 (the AVX2 and portable
// paths give identical results).
void window_mean(const float* const* x, int64_t taps, int64_t C, float divisor, float* y);

}  // namespace etnp
