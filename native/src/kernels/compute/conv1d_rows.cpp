#include "kernels/compute/conv1d_rows.h"

#include "kernels/compute/cpu_features.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

#if defined(__x86_64__)
// Eight rows of 16 positions (row i: output channel i) to 16 position rows of 8 channels at y.
ETNP_TARGET_INLINE("avx512f") void store_transposed(const __m512 (&r)[8], float* y, int64_t ldy) {
  __m512 u[8];
  for (int h = 0; h < 2; h++) {  // channels 4h .. 4h + 3
    const __m512 t0 = _mm512_unpacklo_ps(r[4 * h], r[4 * h + 1]), t1 = _mm512_unpackhi_ps(r[4 * h], r[4 * h + 1]);
    const __m512 t2 = _mm512_unpacklo_ps(r[4 * h + 2], r[4 * h + 3]), t3 = _mm512_unpackhi_ps(r[4 * h + 2], r[4 * h + 3]);
    // u[4h + s], 128-bit lane q: position 4q + s, channels 4h .. 4h + 3
    u[4 * h + 0] = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * h + 1] = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * h + 2] = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * h + 3] = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  }
  const __m512i lo_idx = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i hi_idx = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  for (int s = 0; s < 4; s++) {
    // positions s, 4 + s (lo) and 8 + s, 12 + s (hi): 8 channels each
    const __m512 lo = _mm512_permutex2var_ps(u[s], lo_idx, u[4 + s]);
    const __m512 hi = _mm512_permutex2var_ps(u[s], hi_idx, u[4 + s]);
    _mm256_storeu_ps(y + s * ldy, _mm512_castps512_ps256(lo));
    _mm256_storeu_ps(y + (4 + s) * ldy, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(lo), 1)));
    _mm256_storeu_ps(y + (8 + s) * ldy, _mm512_castps512_ps256(hi));
    _mm256_storeu_ps(y + (12 + s) * ldy, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(hi), 1)));
  }
}

template <int PV>
ETNP_TARGET("avx512f") void tile_avx512(const Conv1dRowsTile& t) {
  __m512 acc[8][PV];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
#pragma GCC unroll 3
    for (int v = 0; v < PV; v++) acc[i][v] = t.init ? _mm512_loadu_ps(t.init + i * 48 + 16 * v) : _mm512_setzero_ps();
  const int64_t C = t.C, KW = t.KW, dw = t.dw, wstep = (t.Cw ? t.Cw : C) * 16;
  for (int64_t c = 0; c < C; c++) {
    const float* xr = t.x + c * t.xs;
    const float* wc = t.wpanel + c * 16;
    for (int64_t j = 0; j < KW; j++) {
      const float* xv = xr + j * dw;
      const float* wk = wc + j * wstep;
      __m512 in[PV];
#pragma GCC unroll 3
      for (int v = 0; v < PV; v++) in[v] = _mm512_loadu_ps(xv + 16 * v);
#pragma GCC unroll 8
      for (int i = 0; i < 8; i++) {
        const __m512 b = _mm512_set1_ps(wk[i]);
#pragma GCC unroll 3
        for (int v = 0; v < PV; v++) acc[i][v] = _mm512_fmadd_ps(b, in[v], acc[i][v]);
      }
    }
  }
  if (t.partial) {
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
#pragma GCC unroll 3
      for (int v = 0; v < PV; v++) _mm512_storeu_ps(t.partial + i * 48 + 16 * v, acc[i][v]);
    return;
  }
  const __m512 vlo = _mm512_set1_ps(t.lo), vhi = _mm512_set1_ps(t.hi);
  if (t.channel_major) {
    const __m512 rlo0 = _mm512_set1_ps(t.res_lo[0]), rhi0 = _mm512_set1_ps(t.res_hi[0]);
    const __m512 rlo1 = _mm512_set1_ps(t.res_lo[1]), rhi1 = _mm512_set1_ps(t.res_hi[1]), slope = _mm512_set1_ps(t.slope);
    const __m512 slope2 = _mm512_set1_ps(t.slope2), zero = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
      const __m512 b = t.bias ? _mm512_set1_ps(t.bias[i]) : _mm512_setzero_ps();
#pragma GCC unroll 3
      for (int v = 0; v < PV; v++) {
        __m512 r = _mm512_min_ps(vhi, _mm512_max_ps(vlo, t.bias ? _mm512_add_ps(acc[i][v], b) : acc[i][v]));
        if (t.res[0]) r = _mm512_min_ps(rhi0, _mm512_max_ps(rlo0, _mm512_add_ps(r, _mm512_loadu_ps(t.res[0] + i * t.ldr + 16 * v))));
        if (t.res[1]) r = _mm512_min_ps(rhi1, _mm512_max_ps(rlo1, _mm512_add_ps(r, _mm512_loadu_ps(t.res[1] + i * t.ldr + 16 * v))));
        // (not r > 0, NaN included: r * slope, as the LeakyReLU node computes it)
        if (t.leaky) r = _mm512_mask_mul_ps(r, _mm512_cmp_ps_mask(r, zero, _CMP_NGT_UQ), r, slope);
        _mm512_storeu_ps(t.y + i * t.ldy + 16 * v, r);
        if (t.y2)
          _mm512_storeu_ps(t.y2 + i * t.ldy + 16 * v, _mm512_mask_mul_ps(r, _mm512_cmp_ps_mask(r, zero, _CMP_NGT_UQ), r, slope2));
      }
    }
    return;
  }
#pragma GCC unroll 3
  for (int v = 0; v < PV; v++) {
    __m512 r[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
      __m512 s = t.bias ? _mm512_add_ps(acc[i][v], _mm512_set1_ps(t.bias[i])) : acc[i][v];
      r[i] = _mm512_min_ps(vhi, _mm512_max_ps(vlo, s));  // NaN stays NaN
    }
    store_transposed(r, t.y + 16 * v * t.ldy, t.ldy);
  }
}
#endif

}  // namespace

bool conv1d_rows_available() {
#if defined(__x86_64__)
  return cpu_has_avx512f();
#else
  return false;
#endif
}

bool conv1d_rows_tile(const Conv1dRowsTile& t, int pv) {
#if defined(__x86_64__)
  if (!cpu_has_avx512f()) return false;
  switch (pv) {
    case 1: tile_avx512<1>(t); return true;
    case 2: tile_avx512<2>(t); return true;
    case 3: tile_avx512<3>(t); return true;
    default: return false;
  }
#else
  (void)t;
  (void)pv;
  return false;
#endif
}

}  // namespace etnp
