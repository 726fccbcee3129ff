// The NEON (aarch64 Advanced SIMD) SGEMM micro-kernel: the 6 x 16 tile of gemm.cpp's packed
// path, on the same layouts (A panel: K x 6 floats, k-major; B panel: K x 16 floats).
#pragma once
#include <cstdint>

namespace etnp {

#if defined(__aarch64__)
// acc[6][16] = sum_k a[k*6 + i] * b[k*16 + j]
void sgemm_micro_neon_6x16(int64_t K, const float* a, const float* b, float* acc);
#endif

}  // namespace etnp
