// Depthwise 2-D convolution of static-int8 values in integer arithmetic (XNNPACK's qs8 / qu8
// dwconv with per-channel qc8w or per-tensor qs8 filters), NHWC, channel multiplier 1:
//   y[p, c] = clamp(sx * sw[c] * sum_t (u[t, c] - pad_code) * w[t, c] + bias[c], lo, hi)
// over the taps t inside the input (the padding is 0), where u are the input's byte codes (uint8;
// pad_code is the code of 0) and w the filter's int8 values. The sums are exact: the products
// are integers summed in float32 below 2^24 (at most kMaxDwQ8Taps taps). The results are stored
// as QOutput says (q8_output.h): float32, snapped to the output's grid, or its byte codes - the
// same epilogue as the int8 GEMM's. AVX-512, AVX2 and portable paths give the same results where the CPU runs
// them with FMA (the portable one multiplies and adds).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/compute/depthwise.h"
#include "kernels/compute/q8_output.h"
#include "util/packed_array.h"

namespace etnp {

constexpr int64_t kMaxDwQ8Taps = 512;  // 512 * 255 * 128 < 2^24: float sums of the products stay exact
// The input codes must be readable this many bytes past their end: the vector paths read whole
// blocks of 16 channels (the padded filter's zero weights meet the ones past the channels).
constexpr int64_t kDwQ8CodeSlack = 16;

// A filter of `taps` x C int8 values prepared once: the values as float32 (exact), channels
// zero-padded to a multiple of 16; the per-channel scales, likewise.
struct PackedDwQ8 {
  int64_t taps = 0, C = 0;
  PackedArray<float> w;      // [taps][C rounded up to 16] (a view where a weight cache file holds it)
  PackedArray<float> scale;  // [C rounded up to 16]
  PackedArray<int32_t> bias_q;  // empty, or [C rounded up to 16] integers added to the sums (as PackedQ8::bias_q)
};
// w[t * C + c]: tap t (row-major over the kernel window), channel c; taps <= kMaxDwQ8Taps
PackedDwQ8 pack_dw_q8(int64_t taps, int64_t C, const int8_t* w, const float* scales);

struct DwQ8Input {
  const uint8_t* codes = nullptr;  // [N, H, W, C], then kDwQ8CodeSlack readable bytes
  float scale = 0.f;               // sx
  int32_t pad_code = 0;            // the code of 0 (0..255)
};

// Output rows [row_begin, row_end) of the N * OH rows (g.lo / g.hi the clamp); out.ldc is C.
void depthwise_q8(const DepthwiseGeom& g, const DwQ8Input& x, const PackedDwQ8& w, const float* bias,
                  const QOutput& out, int64_t row_begin, int64_t row_end);

}  // namespace etnp
