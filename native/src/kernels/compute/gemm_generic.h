// The portable SGEMM tile (every CPU path without SIMD kernels of its own: ETNP_CPU=generic, MSVC,
// RISC-V, POWER, s390x, WASM): plain C++ written for the compiler's auto-vectoriser, on gemm.cpp's
// packed B panels (K x 16 floats, k-major).
#pragma once
#include <cstdint>

namespace etnp {

// C[i][j] = clamp(sum_k A(i, k) * b[k * 16 + j] + bias_row[i] + bias_col[j] (+ C[i][j]), lo, hi)
// for i < rows (<= 6), j < cols (<= 16), A(i, k) = A[i * rsa + k * csa]; bias_row / bias_col may
// be null. A NaN sum stays NaN through the clamp.
void sgemm_tile_generic(int64_t K, int64_t rows, int64_t cols, const float* A, int64_t rsa, int64_t csa,
                        const float* b, float* C, int64_t ldc, const float* bias_row, const float* bias_col,
                        bool accumulate, float lo, float hi);

}  // namespace etnp
