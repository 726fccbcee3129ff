// Depthwise 2-D convolution on NHWC float32 (channel multiplier 1), bias and clamp fused:
// y[n, oh, ow, c] = clamp(bias[c] + sum_{i,j} x[n, ih, iw, c] * w[i, j, c]).
// Channels are innermost, so the AVX2+FMA kernel keeps 16 (then 8) channels in registers
// across all taps of an output pixel; a portable kernel covers other CPUs.
#pragma once
#include <cstdint>

namespace etnp {

struct DepthwiseGeom {
  int64_t N, H, W, C, OH, OW, KH, KW;
  int64_t sh, sw, dh, dw, pad_top, pad_left;
  float lo, hi;
};

// Output rows [row_begin, row_end) of the N*OH rows; w is [KH, KW, C], bias [C] or null.
void depthwise_nhwc_f32(const DepthwiseGeom& g, const float* x, const float* w, const float* bias, float* y,
                        int64_t row_begin, int64_t row_end);

}  // namespace etnp
