// Depthwise 2-D convolution on NHWC float32 (channel multiplier 1), bias and clamp fused:
// y[n, oh, ow, c] = clamp(bias[c] + sum_{i,j} x[n, ih, iw, c] * w[i, j, c]).
// Interior pixels (every tap inside the input) of 3x3 and 5x5 kernels take register-blocked paths:
// on AVX-512 a channel-inner kernel for 3x3 at stride 1 or 2 (four pixels a step) and a
// weight-stationary one otherwise; on AVX2 and aarch64 NEON the weight-stationary one. Border
// pixels and other shapes use per-pixel kernels (AVX-512, AVX2+FMA, portable). All sum the taps
// in the same order. (native_tests/kernel_check.cpp compares every path with the definition.)
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
