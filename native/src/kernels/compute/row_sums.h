// Sums of float32 rows in double precision (a mean over a row's contiguous values: global average
// pooling of an NCHW input, sum / mean over the last dims).
#pragma once
#include <cstdint>

namespace etnp {

// out[r] = the sum of x[r * stride + j] for j < len, r < rows, in double: element j added into
// lane j % 8 for the first len - len % 8 elements, the lanes combined as
// ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)), then the last len % 8 elements added in
// order. The AVX-512, AVX2 and portable paths give identical results.
void row_sums_f64(const float* x, int64_t rows, int64_t len, int64_t stride, double* out);

}  // namespace etnp
