// The 2-D float32 transpose behind NCHW <-> NHWC and the other permutations that reduce to
// swapping two merged dims: y[s][r] = x[r][s] for rows s in [s0, s1) and columns r in [r0, r1)
// of the output (threads take disjoint ranges). 8x8 register blocks on AVX2 (with few rows or few
// columns too: a few channels' NCHW <-> NHWC), cache-sized blocks elsewhere.
#pragma once
#include <cstdint>

namespace etnp {

// x: R rows of S floats; y: S rows of R floats; y[s][r] for s in [s0, s1), r in [r0, r1).
void transpose_2d_f32(const float* x, int64_t R, int64_t S, float* y, int64_t s0, int64_t s1, int64_t r0, int64_t r1);

// y[c * ldy + r] = x[r * ldx + c] for r in [0, rows), c in [0, cols): a block of a larger matrix
// into a block of another (a slice of a sequence's channel rows into position-major rows, say).
void transpose_strided_f32(const float* x, int64_t rows, int64_t cols, int64_t ldx, float* y, int64_t ldy);

}  // namespace etnp
