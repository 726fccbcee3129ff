// Column sums of a row-major float matrix in double precision (the mean of a global average
// pool over NHWC pixels).
#pragma once
#include <cstdint>

namespace etnp {

// out[c] = sum over p < rows of x[p * stride + c], for c < n, each added in row order in double:
// the AVX-512, AVX2 and portable paths give identical results.
void column_sums_f64(const float* x, int64_t rows, int64_t stride, int64_t n, double* out);

}  // namespace etnp
