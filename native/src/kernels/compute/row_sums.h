// Sums of float32 rows: in double precision (a mean over a row's contiguous values: global
// average pooling of an NCHW input), or in float32 one element after the other, as ExecuTorch's
// portable mean sums them (mean.out, an RMSNorm's mean of squares).
#pragma once
#include <cstdint>

namespace etnp {

// out[r] = the sum of x[r * stride + j] for j < len, r < rows, in double: element j added into
// lane j % 8 for the first len - len % 8 elements, the lanes combined as
// ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)), then the last len % 8 elements added in
// order. The AVX-512, AVX2 and portable paths give identical results.
void row_sums_f64(const float* x, int64_t rows, int64_t len, int64_t stride, double* out);

// out[r] = (x[r * stride] + x[r * stride + 1]) + ... in float32 (0 where len is 0), r < rows: each row's adds
// in order, eight rows side by side (a block's elements copied column-major, so the adds of eight
// rows are one vector's).
void row_sums_sequential_f32(const float* x, int64_t rows, int64_t len, int64_t stride, float* out);

}  // namespace etnp
