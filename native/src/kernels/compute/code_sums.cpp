#include "kernels/compute/code_sums.h"

#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace etnp {

namespace {
#if defined(__SSE2__)
// 16 zero bytes, then 16 of 0xff: 16 bytes from kTailMask + r keep the last r bytes
alignas(32) const uint8_t kTailMask[32] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                           255, 255, 255, 255, 255, 255, 255, 255,
                                           255, 255, 255, 255, 255, 255, 255, 255};
#endif

int64_t row_sum(const uint8_t* p, int64_t len) {
  int64_t s = 0, j = 0;
#if defined(__SSE2__)  // (x86-64's baseline) 16 bytes a step, summed in two 64-bit lanes
  if (len >= 16) {
    auto load = [](const uint8_t* q) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)); };
    const __m128i zero = _mm_setzero_si128();
    __m128i acc = zero;
    for (; j + 16 <= len; j += 16) acc = _mm_add_epi64(acc, _mm_sad_epu8(load(p + j), zero));
    if (j < len) {  // the last len - j bytes: the row's last 16, those before them masked off
      const __m128i last = _mm_and_si128(load(p + len - 16), load(kTailMask + (len - j)));
      acc = _mm_add_epi64(acc, _mm_sad_epu8(last, zero));
    }
    return _mm_cvtsi128_si64(acc) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc));
  }
#endif
  for (; j < len; j++) s += p[j];
  return s;
}
}  // namespace

void code_row_sums(const uint8_t* x, int64_t rows, int64_t len, int64_t stride, int64_t* out) {
  for (int64_t r = 0; r < rows; r++) out[r] = row_sum(x + r * stride, len);
}

void code_column_sums(const uint8_t* x, int64_t rows, int64_t stride, int64_t n, int64_t* out) {
  // 32-bit lanes (the compiler's vectors) over parts of at most 2^24 rows: 255 * 2^24 < 2^32
  constexpr int64_t kBlock = 256, kRows = int64_t(1) << 24;
  uint32_t acc[kBlock];
  for (int64_t c0 = 0; c0 < n; c0 += kBlock) {
    const int64_t m = std::min(kBlock, n - c0);
    for (int64_t c = 0; c < m; c++) out[c0 + c] = 0;
    for (int64_t p0 = 0; p0 < rows; p0 += kRows) {
      const int64_t pn = std::min(kRows, rows - p0);
      std::fill(acc, acc + m, 0u);
      for (int64_t p = p0; p < p0 + pn; p++) {
        const uint8_t* row = x + p * stride + c0;
        for (int64_t c = 0; c < m; c++) acc[c] += row[c];
      }
      for (int64_t c = 0; c < m; c++) out[c0 + c] += acc[c];
    }
  }
}

}  // namespace etnp
