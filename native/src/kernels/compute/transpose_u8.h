// The 2-D byte transpose behind NCHW <-> NHWC of int8 values kept as byte codes (an XNNPACK
// StaticTranspose of int8-grid values moves codes, not float32 grid points): y[s][r] = x[r][s] for
// output rows s in [s0, s1) and columns r in [r0, r1) (threads take disjoint ranges). 16 x 16
// register blocks on x86 (AVX2 tier: byte, word, dword, qword unpacks; edge blocks through a
// stack tile; 2-7 rows by byte shuffles), cache-sized blocks of a plain loop elsewhere.
#pragma once
#include <cstdint>

namespace etnp {

// x: R rows of S bytes; y: S rows of R bytes; y[s][r] for s in [s0, s1), r in [r0, r1).
void transpose_2d_u8(const uint8_t* x, int64_t R, int64_t S, uint8_t* y, int64_t s0, int64_t s1, int64_t r0,
                     int64_t r1);

}  // namespace etnp
