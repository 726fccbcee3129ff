// The AVX-512 int8 GEMM's (qgemm.h) accumulator start and epilogue for one 16-column panel,
// shared by qgemm.cpp's VNNI tiles and qgemm_q8_amx.cpp's AMX tiles, so that both turn the same
// int32 sums into the same results.
#pragma once
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/compute/q8_output.h"
#include "kernels/compute/qgemm.h"
#include "kernels/compute/qgemm_generic.h"
#include "util/compiler.h"

namespace etnp::q8_epilogue {

// The integer biases of panel columns n0..n0 + 15 (PackedQ8::bias_q), or 0
ETNP_TARGET_INLINE("avx512f") __m512i int_bias(int64_t n0, const PackedQ8& w) {
  return w.bias_q.empty() ? _mm512_setzero_si512() : _mm512_loadu_si512(w.bias_q.data() + n0);  // (zero-padded)
}

// The accumulators' start for panel columns n0..n0 + 15: with uniform rows (U: QActivations::
// uniform, one zero point) the integer bias minus the zero-point correction (128 + zp) * col_sum,
// so that the epilogue has nothing to add or subtract (wrapping int32 arithmetic, the same sums); else 0.
template <bool U>
ETNP_TARGET_INLINE("avx512f,avx512vnni") __m512i acc_start(int64_t m0, int64_t n0, const QActivations& a,
                                                         const PackedQ8& w) {
  if (!U) return _mm512_setzero_si512();
  const __m512i cs = _mm512_loadu_si512(w.col_sum.data() + n0);  // (zero-padded to whole panels)
  return _mm512_sub_epi32(int_bias(n0, w), _mm512_mullo_epi32(_mm512_set1_epi32(q8_code_offset(a.zero_point[m0])), cs));
}

// The epilogue of one panel's ROWS accumulator rows (rows m0.., columns n0..n0 + 15, those below
// w.N), started at acc_start<U>: the zero-point correction (per row unless U), the scales, bias
// and clamp, stored as `out` asks (q8_output.h).
template <int ROWS, bool U>
ETNP_TARGET_INLINE("avx512f,avx512vnni") void finish_panel(const __m512i* acc, int64_t m0, int64_t n0,
                                                         const QActivations& a, const PackedQ8& w, const float* bias,
                                                         float lo, float hi, const QOutput& out) {
  const Q8Bounds16 bounds = q8_bounds16(out, lo, hi);
  const int64_t cols = std::min<int64_t>(kQ8PanelCols, w.N - n0);
  const __mmask16 m = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
  const __m512 sw = _mm512_maskz_loadu_ps(m, w.scale.data() + n0);
  const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + n0) : _mm512_setzero_ps();
  const __m512 s0 = U ? _mm512_mul_ps(_mm512_set1_ps(a.scale[m0]), sw) : _mm512_setzero_ps();
  const __m512i cs = U ? _mm512_setzero_si512() : _mm512_maskz_loadu_epi32(m, w.col_sum.data() + n0);
  const __m512i bq = U ? _mm512_setzero_si512() : int_bias(n0, w);
  const bool rows_first = !U && a.scale_rows_first;
#pragma GCC unroll 8
  for (int i = 0; i < ROWS; i++) {
    __m512i q = acc[i];
    __m512 r;
    if (U) {
      r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), s0, bv);
    } else {
      q = _mm512_sub_epi32(_mm512_add_epi32(q, bq),
                           _mm512_mullo_epi32(_mm512_set1_epi32(q8_code_offset(a.zero_point[m0 + i])), cs));
      const __m512 sa = _mm512_set1_ps(a.scale[m0 + i]), f = _mm512_cvtepi32_ps(q);
      r = rows_first ? _mm512_fmadd_ps(_mm512_mul_ps(f, sa), sw, bv) : _mm512_fmadd_ps(f, _mm512_mul_ps(sa, sw), bv);
    }
    if (out.accumulate) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, out.C + (m0 + i) * out.ldc + n0));
    store_q8_16(out, (m0 + i) * out.ldc + n0, cols, m, r, bounds);
  }
}

}  // namespace etnp::q8_epilogue
#endif
