#include "kernels/depthwise.h"

#include <algorithm>

#include "kernels/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

// The taps of output position `o` that fall inside the input: [first, last).
inline void tap_range(int64_t o, int64_t stride, int64_t pad, int64_t dil, int64_t k, int64_t in, int64_t& first,
                      int64_t& last) {
  int64_t start = o * stride - pad;  // input coordinate of tap 0
  first = start >= 0 ? 0 : (-start + dil - 1) / dil;
  int64_t end = in - start;           // taps t with start + t*dil < in
  last = end <= 0 ? 0 : std::min<int64_t>(k, (end + dil - 1) / dil);
  if (first > last) first = last;
}

void row_generic(const DepthwiseGeom& g, const float* x, const float* w, const float* bias, float* y, int64_t bn,
                 int64_t oh, int64_t ow_begin, int64_t ow_end) {
  int64_t i0, i1;
  tap_range(oh, g.sh, g.pad_top, g.dh, g.KH, g.H, i0, i1);
  for (int64_t ow = ow_begin; ow < ow_end; ow++) {
    int64_t j0, j1;
    tap_range(ow, g.sw, g.pad_left, g.dw, g.KW, g.W, j0, j1);
    float* out = y + ((bn * g.OH + oh) * g.OW + ow) * g.C;
    for (int64_t c = 0; c < g.C; c++) out[c] = bias ? bias[c] : 0.f;
    for (int64_t i = i0; i < i1; i++) {
      int64_t ih = oh * g.sh - g.pad_top + i * g.dh;
      for (int64_t j = j0; j < j1; j++) {
        int64_t iw = ow * g.sw - g.pad_left + j * g.dw;
        const float* xp = x + ((bn * g.H + ih) * g.W + iw) * g.C;
        const float* kp = w + (i * g.KW + j) * g.C;
        for (int64_t c = 0; c < g.C; c++) out[c] += xp[c] * kp[c];
      }
    }
    for (int64_t c = 0; c < g.C; c++) out[c] = std::min(std::max(out[c], g.lo), g.hi);
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void row_avx2(const DepthwiseGeom& g, const float* x, const float* w,
                                                  const float* bias, float* y, int64_t bn, int64_t oh,
                                                  int64_t ow_begin, int64_t ow_end) {
  int64_t i0, i1;
  tap_range(oh, g.sh, g.pad_top, g.dh, g.KH, g.H, i0, i1);
  const int64_t C = g.C;
  const __m256 lo = _mm256_set1_ps(g.lo), hi = _mm256_set1_ps(g.hi);
  for (int64_t ow = ow_begin; ow < ow_end; ow++) {
    int64_t j0, j1;
    tap_range(ow, g.sw, g.pad_left, g.dw, g.KW, g.W, j0, j1);
    float* out = y + ((bn * g.OH + oh) * g.OW + ow) * C;
    // element offset of tap (0, 0), possibly outside the input (only in-range taps are read)
    const int64_t base = ((bn * g.H + (oh * g.sh - g.pad_top)) * g.W + (ow * g.sw - g.pad_left)) * C;
    int64_t c = 0;
    for (; c + 16 <= C; c += 16) {
      __m256 a0 = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
      __m256 a1 = bias ? _mm256_loadu_ps(bias + c + 8) : _mm256_setzero_ps();
      for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) {
          const float* xp = x + (base + (i * g.dh * g.W + j * g.dw) * C + c);
          const float* kp = w + (i * g.KW + j) * C + c;
          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(xp), _mm256_loadu_ps(kp), a0);
          a1 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 8), _mm256_loadu_ps(kp + 8), a1);
        }
      _mm256_storeu_ps(out + c, _mm256_min_ps(hi, _mm256_max_ps(lo, a0)));  // NaN stays NaN
      _mm256_storeu_ps(out + c + 8, _mm256_min_ps(hi, _mm256_max_ps(lo, a1)));
    }
    for (; c + 8 <= C; c += 8) {
      __m256 a0 = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
      for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++)
          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + (base + (i * g.dh * g.W + j * g.dw) * C + c)),
                               _mm256_loadu_ps(w + (i * g.KW + j) * C + c), a0);
      _mm256_storeu_ps(out + c, _mm256_min_ps(hi, _mm256_max_ps(lo, a0)));
    }
    for (; c < C; c++) {
      float s = bias ? bias[c] : 0.f;
      for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) s += x[base + (i * g.dh * g.W + j * g.dw) * C + c] * w[(i * g.KW + j) * C + c];
      out[c] = std::min(std::max(s, g.lo), g.hi);
    }
  }
}

__attribute__((target("avx512f"))) void row_avx512(const DepthwiseGeom& g, const float* x, const float* w,
                                                  const float* bias, float* y, int64_t bn, int64_t oh,
                                                  int64_t ow_begin, int64_t ow_end) {
  int64_t i0, i1;
  tap_range(oh, g.sh, g.pad_top, g.dh, g.KH, g.H, i0, i1);
  const int64_t C = g.C;
  const __m512 lo = _mm512_set1_ps(g.lo), hi = _mm512_set1_ps(g.hi);
  for (int64_t ow = ow_begin; ow < ow_end; ow++) {
    int64_t j0, j1;
    tap_range(ow, g.sw, g.pad_left, g.dw, g.KW, g.W, j0, j1);
    float* out = y + ((bn * g.OH + oh) * g.OW + ow) * C;
    const int64_t base = ((bn * g.H + (oh * g.sh - g.pad_top)) * g.W + (ow * g.sw - g.pad_left)) * C;
    int64_t c = 0;
    for (; c + 32 <= C; c += 32) {
      __m512 a0 = bias ? _mm512_loadu_ps(bias + c) : _mm512_setzero_ps();
      __m512 a1 = bias ? _mm512_loadu_ps(bias + c + 16) : _mm512_setzero_ps();
      for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) {
          const float* xp = x + (base + (i * g.dh * g.W + j * g.dw) * C + c);
          const float* kp = w + (i * g.KW + j) * C + c;
          a0 = _mm512_fmadd_ps(_mm512_loadu_ps(xp), _mm512_loadu_ps(kp), a0);
          a1 = _mm512_fmadd_ps(_mm512_loadu_ps(xp + 16), _mm512_loadu_ps(kp + 16), a1);
        }
      _mm512_storeu_ps(out + c, _mm512_min_ps(hi, _mm512_max_ps(lo, a0)));  // NaN stays NaN
      _mm512_storeu_ps(out + c + 16, _mm512_min_ps(hi, _mm512_max_ps(lo, a1)));
    }
    for (; c < C; c += 16) {  // the rest, 16 lanes at a time, masked at the end
      __mmask16 m = C - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (C - c)) - 1);
      __m512 a0 = bias ? _mm512_maskz_loadu_ps(m, bias + c) : _mm512_setzero_ps();
      for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++)
          a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + (base + (i * g.dh * g.W + j * g.dw) * C + c)),
                               _mm512_maskz_loadu_ps(m, w + (i * g.KW + j) * C + c), a0);
      _mm512_mask_storeu_ps(out + c, m, _mm512_min_ps(hi, _mm512_max_ps(lo, a0)));
    }
  }
}

// Weight-stationary KH x KW kernels for output columns whose taps all lie inside the input: a
// channel block's weights stay in registers while the row's pixels stream past. Taps are summed
// in the same order as the per-pixel kernels (bias first, then row by row), so results agree.
template <int KH, int KW>
__attribute__((target("avx512f"))) void stationary_avx512(const DepthwiseGeom& g, const float* x, const float* w,
                                                         const float* bias, float* y, int64_t bn, int64_t oh,
                                                         int64_t ow_begin, int64_t ow_end) {
  const int64_t C = g.C, tap_step_w = g.dw * C, tap_step_h = g.dh * g.W * C, step = g.sw * C;
  const float* xrow = x + ((bn * g.H + (oh * g.sh - g.pad_top)) * g.W + (ow_begin * g.sw - g.pad_left)) * C;
  float* yrow = y + ((bn * g.OH + oh) * g.OW + ow_begin) * C;
  const __m512 lo = _mm512_set1_ps(g.lo), hi = _mm512_set1_ps(g.hi);
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 m = C - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (C - c)) - 1);
    __m512 k[KH * KW];
    for (int t = 0; t < KH * KW; t++) k[t] = _mm512_maskz_loadu_ps(m, w + t * C + c);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias + c) : _mm512_setzero_ps();
    const float* xp = xrow + c;
    float* yp = yrow + c;
    for (int64_t ow = ow_begin; ow < ow_end; ow++, xp += step, yp += C) {
      __m512 acc = b;
      for (int i = 0; i < KH; i++)
        for (int j = 0; j < KW; j++)
          acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xp + i * tap_step_h + j * tap_step_w), k[i * KW + j], acc);
      _mm512_mask_storeu_ps(yp, m, _mm512_min_ps(hi, _mm512_max_ps(lo, acc)));  // NaN stays NaN
    }
  }
}

template <int KH, int KW>
__attribute__((target("avx2,fma"))) void stationary_avx2(const DepthwiseGeom& g, const float* x, const float* w,
                                                        const float* bias, float* y, int64_t bn, int64_t oh,
                                                        int64_t ow_begin, int64_t ow_end) {
  const int64_t C = g.C, tap_step_w = g.dw * C, tap_step_h = g.dh * g.W * C, step = g.sw * C;
  const float* xrow = x + ((bn * g.H + (oh * g.sh - g.pad_top)) * g.W + (ow_begin * g.sw - g.pad_left)) * C;
  float* yrow = y + ((bn * g.OH + oh) * g.OW + ow_begin) * C;
  const __m256 lo = _mm256_set1_ps(g.lo), hi = _mm256_set1_ps(g.hi);
  int64_t c = 0;
  for (; c + 8 <= C; c += 8) {
    __m256 k[KH * KW];
    for (int t = 0; t < KH * KW; t++) k[t] = _mm256_loadu_ps(w + t * C + c);
    const __m256 b = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
    const float* xp = xrow + c;
    float* yp = yrow + c;
    for (int64_t ow = ow_begin; ow < ow_end; ow++, xp += step, yp += C) {
      __m256 acc = b;
      for (int i = 0; i < KH; i++)
        for (int j = 0; j < KW; j++)
          acc = _mm256_fmadd_ps(_mm256_loadu_ps(xp + i * tap_step_h + j * tap_step_w), k[i * KW + j], acc);
      _mm256_storeu_ps(yp, _mm256_min_ps(hi, _mm256_max_ps(lo, acc)));
    }
  }
  for (; c < C; c++) {  // channels past the last 8-block
    const float* xp = xrow + c;
    float* yp = yrow + c;
    for (int64_t ow = ow_begin; ow < ow_end; ow++, xp += step, yp += C) {
      float s = bias ? bias[c] : 0.f;
      for (int i = 0; i < KH; i++)
        for (int j = 0; j < KW; j++) s += xp[i * tap_step_h + j * tap_step_w] * w[(i * KW + j) * C + c];
      *yp = std::min(std::max(s, g.lo), g.hi);
    }
  }
}
#endif

}  // namespace

void depthwise_nhwc_f32(const DepthwiseGeom& g, const float* x, const float* w, const float* bias, float* y,
                        int64_t row_begin, int64_t row_end) {
  // Interior columns [ow_lo, ow_hi): every horizontal tap inside the input.
  int64_t ow_lo = 0, ow_hi = 0;
  while (ow_lo < g.OW && ow_lo * g.sw - g.pad_left < 0) ow_lo++;
  for (ow_hi = g.OW; ow_hi > ow_lo && (ow_hi - 1) * g.sw - g.pad_left + (g.KW - 1) * g.dw >= g.W; ow_hi--) {}
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma(), avx512 = cpu_has_avx512f();
  using Stationary = void (*)(const DepthwiseGeom&, const float*, const float*, const float*, float*, int64_t, int64_t,
                              int64_t, int64_t);
  Stationary fast = nullptr;
  if (g.KH == 3 && g.KW == 3) fast = avx512 ? &stationary_avx512<3, 3> : avx2 ? &stationary_avx2<3, 3> : nullptr;
  if (g.KH == 5 && g.KW == 5) fast = avx512 ? &stationary_avx512<5, 5> : avx2 ? &stationary_avx2<5, 5> : nullptr;
  auto edge = avx512 ? &row_avx512 : avx2 ? &row_avx2 : &row_generic;
  for (int64_t r = row_begin; r < row_end; r++) {
    int64_t bn = r / g.OH, oh = r % g.OH, ih0 = oh * g.sh - g.pad_top;
    bool rows_inside = ih0 >= 0 && ih0 + (g.KH - 1) * g.dh < g.H;
    if (fast && rows_inside && ow_lo < ow_hi) {
      edge(g, x, w, bias, y, bn, oh, 0, ow_lo);
      fast(g, x, w, bias, y, bn, oh, ow_lo, ow_hi);
      edge(g, x, w, bias, y, bn, oh, ow_hi, g.OW);
    } else {
      edge(g, x, w, bias, y, bn, oh, 0, g.OW);
    }
  }
#else
  for (int64_t r = row_begin; r < row_end; r++) row_generic(g, x, w, bias, y, r / g.OH, r % g.OH, 0, g.OW);
#endif
}

}  // namespace etnp
