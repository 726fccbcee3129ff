// 3x3 stride-1 convolutions by Winograd's minimal filtering F(2x2, 3x3) (Lavin & Gray, 2015):
// each 2x2 block of output pixels comes from a 4x4 patch of the input through 16 products per
// (input, output channel) pair instead of 36, as 16 GEMMs of [tiles x IC] x [IC x OC] between
// an input transform (B^T d B) and an output transform (A^T m A). The transforms' coefficients
// are 0, +-1 (input, output) and 0, +-1/2, 1 (filter, once at load): the results differ from a
// direct sum by rounding only (a few units in the last place of the terms' magnitude).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/compute/gemm.h"
#include "threadpool/threadpool.h"

namespace etnp {

// The 16 transformed filters U[xi] = (G g G^T)[xi], each packed as a [IC x OC] GEMM operand,
// from a 3x3 filter packed for the direct GEMM (pack_b of [9 * IC x OC], rows (kh, kw, ic)).
// Empty where `direct` holds float16 panels or its shape is not 9 * IC rows.
std::vector<PackedB> winograd_filters_3x3(ThreadPool* pool, const PackedB& direct, int64_t IC);

struct WinogradGeom {
  int64_t N, H, W, C;      // the NHWC input
  int64_t OH, OW, OC;      // the NHWC output (OH = H + pad_top + pad_bottom - 2 * dilation, likewise OW)
  int64_t pad_top, pad_left;
  int64_t dilation = 1;    // the taps' spacing, along both axes
};
// The bands of 2 * dilation output rows (or columns) covering `out` of them
inline int64_t winograd_bands(int64_t out, int64_t dilation) { return (out + 2 * dilation - 1) / (2 * dilation); }

// Y = conv3x3(X) (stride 1, any dilation) with the epilogue of a GEMM writing Y as
// [N * OH * OW, OC] rows (bias_col, the clamp, the fused residual and rows_done over whole output
// rows; bias_row and accumulate are not taken: false, before any work). U: winograd_filters_3x3's.
bool conv3x3_winograd_f32(ThreadPool* pool, const WinogradGeom& g, const float* X, const std::vector<PackedB>& U,
                          float* Y, const GemmEpilogue& ep);

}  // namespace etnp
