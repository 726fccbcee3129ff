// The NEON (aarch64 Advanced SIMD) int8 GEMM inner loop: one row of uint8 activations against
// one 16-column panel of qgemm.cpp's packed weights (groups of 4 k: 16 columns x 4 int8), on base
// ARMv8 or on the dot-product extension.
#pragma once
#include <cstdint>

#include "util/compiler.h"

namespace etnp {

#if defined(__aarch64__)
// acc[j] = sum over the G groups g and t < 4 of x[4g + t] * b[(g * 16 + j) * 4 + t], j < 16.
void q8_row_panel_neon(int64_t G, const uint8_t* x, const int8_t* b, int32_t* acc);
#if ETNP_NEON_DOT_KERNELS
// The same on the dot-product instructions (SDOT; only where cpu_has_neon_dot()), given the
// panel's 16 column sums col_sum[j] = the sum of column j's weights (the same int32 sums).
void q8_row_panel_neon_dot(int64_t G, const uint8_t* x, const int8_t* b, const int32_t* col_sum, int32_t* acc);
#endif
#endif

}  // namespace etnp
