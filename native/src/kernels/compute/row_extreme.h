// The index of a float32 row's extreme element (argmax / argmin, and max / min read through it):
// AVX-512, AVX2 and portable paths, chosen at run time like the GEMMs (ETNP_CPU caps the choice).
#pragma once
#include <cstdint>

namespace etnp {

// The index of the largest (MAX) or smallest element of ROW[0, n), n >= 1: its first NaN if it
// has one, else the first of the equal extremes (+0 and -0 equal) - what a sequential scan
// keeping the first gives, on every path.
int64_t row_extreme_index(const float* row, int64_t n, bool max);

}  // namespace etnp
