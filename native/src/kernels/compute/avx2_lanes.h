// A mask of the first k lanes of an AVX2 vector of 8 floats (0 <= k <= 8), for the masked loads
// and stores of a row's last, partial vector.
#pragma once
#include <cstdint>

#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace etnp {

ETNP_TARGET_INLINE("avx2") __m256i first_lanes_avx2(int64_t k) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace etnp
#endif
