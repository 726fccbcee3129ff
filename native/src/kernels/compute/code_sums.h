// Exact sums of int8 byte codes (static-int8 values kept as codes, Value::as_codes): the integer
// sums of a global average pool over an NCHW input (rows) or NHWC pixels (columns).
#pragma once
#include <cstdint>

namespace etnp {

// out[r] = the sum of x[r * stride + j] for j < len, r < rows (exact).
void code_row_sums(const uint8_t* x, int64_t rows, int64_t len, int64_t stride, int64_t* out);

// out[c] = the sum over p < rows of x[p * stride + c], for c < n (exact).
void code_column_sums(const uint8_t* x, int64_t rows, int64_t stride, int64_t n, int64_t* out);

}  // namespace etnp
