#include "kernels/compute/depthwise.h"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/compute/avx2_lanes.h"
#include "kernels/compute/cpu_features.h"
#include "kernels/compute/portable_ops.h"
#include "os/thread_slot.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
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

// One output pixel's CB channels (the portable path), unclamped: its in-range taps [i0, i1) x [j0, j1)
// summed into CB accumulators - a local array the compiler keeps in vector registers across the tap
// loops (GCC vectorises the loop over the block's channels; copying the taps to local arrays first,
// or ETNP_SLP_ONLY, made it split the accumulators into misaligned pieces); x + base: the
// pixel's tap (0, 0) (maybe outside the input: only in-range taps are read); wb, bb: the filter and
// the bias (zeros where there is none); all at the block's first channel.
template <int CB>
void pixel_channels_generic(const float* x, int64_t base, const float* wb, const float* bb, float* out, int64_t i0,
                            int64_t i1, int64_t j0, int64_t j1, int64_t step_h, int64_t step_w, int64_t KW, int64_t C) {
  float acc[CB];
  for (int l = 0; l < CB; l++) acc[l] = bb[l];
  for (int64_t i = i0; i < i1; i++)
    for (int64_t j = j0; j < j1; j++) {
      const float* xp = x + (base + i * step_h + j * step_w);
      const float* kp = wb + (i * KW + j) * C;
      for (int l = 0; l < CB; l++) acc[l] += xp[l] * kp[l];
    }
  for (int l = 0; l < CB; l++) out[l] = acc[l];  // (clamped by the caller, over the whole pixel)
}

void row_generic(const DepthwiseGeom& g, const float* x, const float* w, const float* bias, float* y, int64_t bn,
                 int64_t oh, int64_t ow_begin, int64_t ow_end) {
  int64_t i0, i1;
  tap_range(oh, g.sh, g.pad_top, g.dh, g.KH, g.H, i0, i1);
  const int64_t C = g.C, step_h = g.dh * g.W * C, step_w = g.dw * C;
  for (int64_t ow = ow_begin; ow < ow_end; ow++) {
    int64_t j0, j1;
    tap_range(ow, g.sw, g.pad_left, g.dw, g.KW, g.W, j0, j1);
    float* out = y + ((bn * g.OH + oh) * g.OW + ow) * C;
    const int64_t base = ((bn * g.H + oh * g.sh - g.pad_top) * g.W + (ow * g.sw - g.pad_left)) * C;
    static const float zeros[16] = {};
    auto block = [&](auto cb, int64_t c) {
      pixel_channels_generic<decltype(cb)::value>(x, base + c, w + c, bias ? bias + c : zeros, out + c, i0, i1, j0, j1,
                                                  step_h, step_w, g.KW, C);
    };
    int64_t c = 0;
    for (; c + 16 <= C; c += 16) block(std::integral_constant<int, 16>(), c);
    for (; c + 4 <= C; c += 4) block(std::integral_constant<int, 4>(), c);
    for (; c < C; c++) block(std::integral_constant<int, 1>(), c);
    for (c = 0; c < C; c++) out[c] = clamp_f32(out[c], g.lo, g.hi);  // (NaN stays NaN)
  }
}

#if defined(__x86_64__)
template <bool MASKED>
ETNP_TARGET_INLINE("avx2,fma") __m256 load8(__m256i m, const float* p) {
  return MASKED ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}
template <bool MASKED>
ETNP_TARGET_INLINE("avx2,fma") void store8(__m256i m, float* p, __m256 v) {
  if (MASKED) _mm256_maskstore_ps(p, m, v);
  else _mm256_storeu_ps(p, v);
}

// One output pixel's channels [c, c + 8 NV): NV independent FMA chains over its in-range taps
// [i0, i1) x [j0, j1); base is the element offset of tap (0, 0).
template <int NV>
ETNP_TARGET_INLINE("avx2,fma") void pixel_channels_avx2(const DepthwiseGeom& g, const float* x, const float* w,
                                                     const float* bias, float* out, int64_t base, int64_t i0,
                                                     int64_t i1, int64_t j0, int64_t j1, int64_t c, __m256 lo,
                                                     __m256 hi) {
  const int64_t C = g.C;
  __m256 a[NV];
  for (int v = 0; v < NV; v++) a[v] = bias ? _mm256_loadu_ps(bias + c + 8 * v) : _mm256_setzero_ps();
  for (int64_t i = i0; i < i1; i++)
    for (int64_t j = j0; j < j1; j++) {
      const float* xp = x + (base + (i * g.dh * g.W + j * g.dw) * C + c);
      const float* kp = w + (i * g.KW + j) * C + c;
      for (int v = 0; v < NV; v++) a[v] = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 8 * v), _mm256_loadu_ps(kp + 8 * v), a[v]);
    }
  for (int v = 0; v < NV; v++) _mm256_storeu_ps(out + c + 8 * v, _mm256_min_ps(hi, _mm256_max_ps(lo, a[v])));  // NaN stays NaN
}

ETNP_TARGET("avx2,fma") void row_avx2(const DepthwiseGeom& g, const float* x, const float* w,
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
    // 32, then 16, then 8 channels a step (four FMA chains in flight where there are enough)
    for (; c + 32 <= C; c += 32) pixel_channels_avx2<4>(g, x, w, bias, out, base, i0, i1, j0, j1, c, lo, hi);
    for (; c + 16 <= C; c += 16) pixel_channels_avx2<2>(g, x, w, bias, out, base, i0, i1, j0, j1, c, lo, hi);
    for (; c + 8 <= C; c += 8) pixel_channels_avx2<1>(g, x, w, bias, out, base, i0, i1, j0, j1, c, lo, hi);
    if (c < C) {  // channels past the last full block: masked
      const __m256i m = first_lanes_avx2(C - c);
      __m256 a = bias ? _mm256_maskload_ps(bias + c, m) : _mm256_setzero_ps();
      for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++)
          a = _mm256_fmadd_ps(_mm256_maskload_ps(x + (base + (i * g.dh * g.W + j * g.dw) * C + c), m),
                              _mm256_maskload_ps(w + (i * g.KW + j) * C + c, m), a);
      _mm256_maskstore_ps(out + c, m, _mm256_min_ps(hi, _mm256_max_ps(lo, a)));
    }
  }
}

ETNP_TARGET("avx512f") void row_avx512(const DepthwiseGeom& g, const float* x, const float* w,
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

template <bool FULL>
ETNP_TARGET_INLINE("avx512f") __m512 load16(__mmask16 m, const float* p) {
  return FULL ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
template <bool FULL>
ETNP_TARGET_INLINE("avx512f") void store16(__mmask16 m, float* p, __m512 v) {
  if (FULL) _mm512_storeu_ps(p, v);
  else _mm512_mask_storeu_ps(p, m, v);
}

// One block of 16 channels (the lanes in m; all of them when FULL) across columns [ow_begin, ow_end).
template <int KH, int KW, bool FULL>
ETNP_TARGET("avx512f") void stationary_block_avx512(const DepthwiseGeom& g, const float* xp,
                                                               const float* wc, const float* bc, float* yp,
                                                               int64_t cols, __mmask16 m) {
  const int64_t C = g.C, tap_w = g.dw * C, tap_h = g.dh * g.W * C, step = g.sw * C;
  const __m512 lo = _mm512_set1_ps(g.lo), hi = _mm512_set1_ps(g.hi);
  __m512 k[KH * KW];
  for (int t = 0; t < KH * KW; t++) k[t] = load16<FULL>(m, wc + t * C);
  const __m512 b = bc ? load16<FULL>(m, bc) : _mm512_setzero_ps();
  int64_t ow = 0;
  // four pixels at a time: four independent FMA chains in flight
  for (; ow + 4 <= cols; ow += 4, xp += 4 * step, yp += 4 * C) {
    __m512 a0 = b, a1 = b, a2 = b, a3 = b;
#pragma GCC unroll 5
    for (int i = 0; i < KH; i++) {
      const float* r = xp + i * tap_h;
#pragma GCC unroll 5
      for (int j = 0; j < KW; j++, r += tap_w) {
        const __m512 kk = k[i * KW + j];
        a0 = _mm512_fmadd_ps(load16<FULL>(m, r), kk, a0);
        a1 = _mm512_fmadd_ps(load16<FULL>(m, r + step), kk, a1);
        a2 = _mm512_fmadd_ps(load16<FULL>(m, r + 2 * step), kk, a2);
        a3 = _mm512_fmadd_ps(load16<FULL>(m, r + 3 * step), kk, a3);
      }
    }
    store16<FULL>(m, yp, _mm512_min_ps(hi, _mm512_max_ps(lo, a0)));  // NaN stays NaN
    store16<FULL>(m, yp + C, _mm512_min_ps(hi, _mm512_max_ps(lo, a1)));
    store16<FULL>(m, yp + 2 * C, _mm512_min_ps(hi, _mm512_max_ps(lo, a2)));
    store16<FULL>(m, yp + 3 * C, _mm512_min_ps(hi, _mm512_max_ps(lo, a3)));
  }
  for (; ow < cols; ow++, xp += step, yp += C) {
    __m512 acc = b;
    for (int i = 0; i < KH; i++)
      for (int j = 0; j < KW; j++) acc = _mm512_fmadd_ps(load16<FULL>(m, xp + i * tap_h + j * tap_w), k[i * KW + j], acc);
    store16<FULL>(m, yp, _mm512_min_ps(hi, _mm512_max_ps(lo, acc)));
  }
}

// Weight-stationary KH x KW kernels for output columns whose taps all lie inside the input: a
// channel block's weights stay in registers while the row's pixels stream past. Taps are summed
// in the same order as the per-pixel kernels (bias first, then row by row), so results agree.
template <int KH, int KW>
ETNP_TARGET("avx512f") void stationary_avx512(const DepthwiseGeom& g, const float* x, const float* w,
                                                         const float* bias, float* y, int64_t bn, int64_t oh,
                                                         int64_t ow_begin, int64_t ow_end) {
  const int64_t C = g.C;
  const float* xrow = x + ((bn * g.H + (oh * g.sh - g.pad_top)) * g.W + (ow_begin * g.sw - g.pad_left)) * C;
  float* yrow = y + ((bn * g.OH + oh) * g.OW + ow_begin) * C;
  int64_t c = 0;
  for (; c + 16 <= C; c += 16)
    stationary_block_avx512<KH, KW, true>(g, xrow + c, w + c, bias ? bias + c : nullptr, yrow + c, ow_end - ow_begin, 0xFFFF);
  if (c < C)
    stationary_block_avx512<KH, KW, false>(g, xrow + c, w + c, bias ? bias + c : nullptr, yrow + c, ow_end - ow_begin,
                                           (__mmask16)((1u << (C - c)) - 1));
}

// Channel-inner kernel for stride SW, no dilation: P adjacent output pixels at a time; for each
// 16-channel block the taps' weights are loaded once and every input vector feeds the pixels
// whose windows hold it (identical addresses are loaded once). Reads stream along the channels
// (prefetch-friendly, whole cache lines used at once). Same summation order as the others.
template <int KH, int KW, int SW, int P, bool FULL>
ETNP_TARGET_INLINE("avx512f") void pixels_block_avx512(const float* xp, const float* wc,
                                                                                 const float* bc, float* yp, int64_t C,
                                                                                 int64_t row, __mmask16 m, __m512 lo,
                                                                                 __m512 hi) {
  __m512 acc[P];
  const __m512 b = bc ? load16<FULL>(m, bc) : _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int p = 0; p < P; p++) acc[p] = b;
#pragma GCC unroll 5
  for (int i = 0; i < KH; i++)
#pragma GCC unroll 5
    for (int j = 0; j < KW; j++) {
      const __m512 k = load16<FULL>(m, wc + (i * KW + j) * C);
#pragma GCC unroll 4
      for (int p = 0; p < P; p++) acc[p] = _mm512_fmadd_ps(load16<FULL>(m, xp + i * row + (p * SW + j) * C), k, acc[p]);
    }
#pragma GCC unroll 4
  for (int p = 0; p < P; p++) store16<FULL>(m, yp + p * C, _mm512_min_ps(hi, _mm512_max_ps(lo, acc[p])));
}

template <int KH, int KW, int SW>
ETNP_TARGET("avx512f") void channel_inner_avx512(const DepthwiseGeom& g, const float* x, const float* w,
                                                            const float* bias, float* y, int64_t bn, int64_t oh,
                                                            int64_t ow_begin, int64_t ow_end) {
  const int64_t C = g.C, row = g.W * C;
  const float* xrow = x + ((bn * g.H + (oh * g.sh - g.pad_top)) * g.W + (ow_begin * SW - g.pad_left)) * C;
  float* yrow = y + ((bn * g.OH + oh) * g.OW + ow_begin) * C;
  const __m512 lo = _mm512_set1_ps(g.lo), hi = _mm512_set1_ps(g.hi);
  const int64_t full = C / 16 * 16;
  const __mmask16 tail = (__mmask16)((1u << (C - full)) - 1);
  int64_t ow = ow_begin;
  for (; ow + 4 <= ow_end; ow += 4, xrow += 4 * SW * C, yrow += 4 * C) {
    for (int64_t c = 0; c < full; c += 16)
      pixels_block_avx512<KH, KW, SW, 4, true>(xrow + c, w + c, bias ? bias + c : nullptr, yrow + c, C, row, 0xFFFF, lo, hi);
    if (full < C)
      pixels_block_avx512<KH, KW, SW, 4, false>(xrow + full, w + full, bias ? bias + full : nullptr, yrow + full, C, row,
                                                tail, lo, hi);
  }
  for (; ow < ow_end; ow++, xrow += SW * C, yrow += C) {
    for (int64_t c = 0; c < full; c += 16)
      pixels_block_avx512<KH, KW, SW, 1, true>(xrow + c, w + c, bias ? bias + c : nullptr, yrow + c, C, row, 0xFFFF, lo, hi);
    if (full < C)
      pixels_block_avx512<KH, KW, SW, 1, false>(xrow + full, w + full, bias ? bias + full : nullptr, yrow + full, C, row,
                                                tail, lo, hi);
  }
}

// One block of 8 channels (the lanes in m when MASKED: the channels past the last full block)
// across `cols` output pixels, the taps' weights in registers.
template <int KH, int KW, bool MASKED>
ETNP_TARGET("avx2,fma") void stationary_block_avx2(const DepthwiseGeom& g, const float* xp, const float* wc,
                                                   const float* bc, float* yp, int64_t cols, __m256i m) {
  const int64_t C = g.C, tap_step_w = g.dw * C, tap_step_h = g.dh * g.W * C, step = g.sw * C;
  const __m256 lo = _mm256_set1_ps(g.lo), hi = _mm256_set1_ps(g.hi);
  __m256 k[KH * KW];
  for (int t = 0; t < KH * KW; t++) k[t] = load8<MASKED>(m, wc + t * C);
  const __m256 b = bc ? load8<MASKED>(m, bc) : _mm256_setzero_ps();
  int64_t ow = 0;
  for (; ow + 4 <= cols; ow += 4, xp += 4 * step, yp += 4 * C) {  // four FMA chains in flight
    __m256 a0 = b, a1 = b, a2 = b, a3 = b;
#pragma GCC unroll 5
    for (int i = 0; i < KH; i++)
#pragma GCC unroll 5
      for (int j = 0; j < KW; j++) {
        const float* t = xp + i * tap_step_h + j * tap_step_w;
        const __m256 kk = k[i * KW + j];
        a0 = _mm256_fmadd_ps(load8<MASKED>(m, t), kk, a0);
        a1 = _mm256_fmadd_ps(load8<MASKED>(m, t + step), kk, a1);
        a2 = _mm256_fmadd_ps(load8<MASKED>(m, t + 2 * step), kk, a2);
        a3 = _mm256_fmadd_ps(load8<MASKED>(m, t + 3 * step), kk, a3);
      }
    store8<MASKED>(m, yp, _mm256_min_ps(hi, _mm256_max_ps(lo, a0)));
    store8<MASKED>(m, yp + C, _mm256_min_ps(hi, _mm256_max_ps(lo, a1)));
    store8<MASKED>(m, yp + 2 * C, _mm256_min_ps(hi, _mm256_max_ps(lo, a2)));
    store8<MASKED>(m, yp + 3 * C, _mm256_min_ps(hi, _mm256_max_ps(lo, a3)));
  }
  for (; ow < cols; ow++, xp += step, yp += C) {
    __m256 acc = b;
    for (int i = 0; i < KH; i++)
      for (int j = 0; j < KW; j++)
        acc = _mm256_fmadd_ps(load8<MASKED>(m, xp + i * tap_step_h + j * tap_step_w), k[i * KW + j], acc);
    store8<MASKED>(m, yp, _mm256_min_ps(hi, _mm256_max_ps(lo, acc)));
  }
}

template <int KH, int KW>
ETNP_TARGET("avx2,fma") void stationary_avx2(const DepthwiseGeom& g, const float* x, const float* w,
                                                        const float* bias, float* y, int64_t bn, int64_t oh,
                                                        int64_t ow_begin, int64_t ow_end) {
  const int64_t C = g.C;
  const float* xrow = x + ((bn * g.H + (oh * g.sh - g.pad_top)) * g.W + (ow_begin * g.sw - g.pad_left)) * C;
  float* yrow = y + ((bn * g.OH + oh) * g.OW + ow_begin) * C;
  const __m256i all = _mm256_set1_epi32(-1);
  int64_t c = 0;
  for (; c + 8 <= C; c += 8)
    stationary_block_avx2<KH, KW, false>(g, xrow + c, w + c, bias ? bias + c : nullptr, yrow + c, ow_end - ow_begin, all);
  if (c < C)  // channels past the last full block: masked
    stationary_block_avx2<KH, KW, true>(g, xrow + c, w + c, bias ? bias + c : nullptr, yrow + c, ow_end - ow_begin,
                                        first_lanes_avx2(C - c));
}

// Stride 1, channel counts off the vector width (C % 8 != 0: 4, 6, 12, 36 ...), where the
// channel-vector kernels leave channels to scalar code. Output columns [ow_begin, ow_end) of a
// row are one flat run of (ow_end - ow_begin) * C floats, and so is each tap's input (shifted by
// the tap's offset): 32 floats a step whatever C is, against weights (and bias) tiled along the
// run with period P = lcm(C, 8) (FlatTaps). Tap rows [i0, i1) only (the others lie outside the
// input); same summation order as the per-pixel kernels.
struct FlatTaps {
  int64_t P = 0, L = 0;   // period, and the length of each tiled row (P + 24: four vectors from any phase)
  std::vector<float> w;   // [KH * KW][L]: w[t][f] = weight of tap t, channel f % C
  std::vector<float> b;   // [L]: bias of channel f % C (zeros without one)
};
inline int64_t lcm_with_8(int64_t C) {
  int64_t a = C, b = 8;
  while (b) std::swap(a, b), b %= a;  // gcd in a
  return C / a * 8;
}
void tile_taps(const DepthwiseGeom& g, const float* w, const float* bias, FlatTaps& t) {
  const int64_t C = g.C, T = g.KH * g.KW;
  t.P = lcm_with_8(C);
  t.L = t.P + 24;
  t.w.resize((size_t)(T * t.L));
  t.b.resize((size_t)t.L);
  for (int64_t f = 0; f < t.L; f++) {
    for (int64_t k = 0; k < T; k++) t.w[(size_t)(k * t.L + f)] = w[k * C + f % C];
    t.b[(size_t)f] = bias ? bias[f % C] : 0.f;
  }
}

ETNP_TARGET("avx2,fma") void flat_row_avx2(const DepthwiseGeom& g, const float* x, const FlatTaps& t, float* y,
                                           int64_t bn, int64_t oh, int64_t ow_begin, int64_t ow_end) {
  int64_t i0, i1;
  tap_range(oh, g.sh, g.pad_top, g.dh, g.KH, g.H, i0, i1);
  const int64_t C = g.C, KW = g.KW, L = t.L, P = t.P, n = (ow_end - ow_begin) * C;
  const int64_t row = g.dh * g.W * C, col = g.dw * C;
  // element offset of tap (i0, 0) for the run's first element (inside the input)
  const float* x0 = x + ((bn * g.H + (oh * g.sh - g.pad_top + i0 * g.dh)) * g.W + (ow_begin - g.pad_left)) * C;
  float* yrow = y + ((bn * g.OH + oh) * g.OW + ow_begin) * C;
  const float* wt = t.w.data() + i0 * KW * L;
  const __m256 lo = _mm256_set1_ps(g.lo), hi = _mm256_set1_ps(g.hi);
  int64_t f = 0, ph = 0;  // ph = f % P
  for (; f + 32 <= n; f += 32) {
    __m256 a0 = _mm256_loadu_ps(t.b.data() + ph), a1 = _mm256_loadu_ps(t.b.data() + ph + 8),
           a2 = _mm256_loadu_ps(t.b.data() + ph + 16), a3 = _mm256_loadu_ps(t.b.data() + ph + 24);
    const float* xr = x0 + f;
    const float* wr = wt + ph;
    for (int64_t i = i0; i < i1; i++, xr += row)
      for (int64_t j = 0; j < KW; j++, wr += L) {
        const float* xp = xr + j * col;
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(xp), _mm256_loadu_ps(wr), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 8), _mm256_loadu_ps(wr + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 16), _mm256_loadu_ps(wr + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 24), _mm256_loadu_ps(wr + 24), a3);
      }
    _mm256_storeu_ps(yrow + f, _mm256_min_ps(hi, _mm256_max_ps(lo, a0)));  // NaN stays NaN
    _mm256_storeu_ps(yrow + f + 8, _mm256_min_ps(hi, _mm256_max_ps(lo, a1)));
    _mm256_storeu_ps(yrow + f + 16, _mm256_min_ps(hi, _mm256_max_ps(lo, a2)));
    _mm256_storeu_ps(yrow + f + 24, _mm256_min_ps(hi, _mm256_max_ps(lo, a3)));
    ph += 32;
    while (ph >= P) ph -= P;
  }
  for (; f < n; f += 8) {  // the rest, 8 at a time, the last masked
    const int64_t k = std::min<int64_t>(8, n - f);
    const __m256i m = first_lanes_avx2(k);
    __m256 a = _mm256_loadu_ps(t.b.data() + ph);
    const float* xr = x0 + f;
    const float* wr = wt + ph;
    for (int64_t i = i0; i < i1; i++, xr += row)
      for (int64_t j = 0; j < KW; j++, wr += L) a = _mm256_fmadd_ps(_mm256_maskload_ps(xr + j * col, m), _mm256_loadu_ps(wr), a);
    _mm256_maskstore_ps(yrow + f, m, _mm256_min_ps(hi, _mm256_max_ps(lo, a)));
    ph += 8;
    while (ph >= P) ph -= P;
  }
}
#endif

#if defined(__aarch64__)
// The NEON weight-stationary kernel's channels [c0, C) past their last full vector, one at a time, for
// output pixels [ow_begin, ow_end) of the row at xrow / yrow (the interior: every tap inside).
void stationary_channels_scalar(const DepthwiseGeom& g, const float* xrow, const float* w, const float* bias,
                                float* yrow, int64_t c0, int64_t ow_begin, int64_t ow_end) {
  const int64_t C = g.C, KH = g.KH, KW = g.KW, tap_step_w = g.dw * C, tap_step_h = g.dh * g.W * C, step = g.sw * C;
  for (int64_t c = c0; c < C; c++) {
    const float* xp = xrow + c;
    float* yp = yrow + c;
    for (int64_t ow = ow_begin; ow < ow_end; ow++, xp += step, yp += C) {
      float s = bias ? bias[c] : 0.f;
      for (int64_t i = 0; i < KH; i++)
        for (int64_t j = 0; j < KW; j++) s += xp[i * tap_step_h + j * tap_step_w] * w[(i * KW + j) * C + c];
      *yp = std::min(std::max(s, g.lo), g.hi);
    }
  }
}

// NEON (base aarch64): KH x KW taps of 4 channels held in registers, four output pixels at a time
// (four FMA chains); clamps keep a NaN, as the x86 paths' min/max with the value second.
template <int KH, int KW>
void stationary_neon(const DepthwiseGeom& g, const float* x, const float* w, const float* bias, float* y, int64_t bn,
                     int64_t oh, int64_t ow_begin, int64_t ow_end) {
  const int64_t C = g.C, tap_step_w = g.dw * C, tap_step_h = g.dh * g.W * C, step = g.sw * C;
  const float* xrow = x + ((bn * g.H + (oh * g.sh - g.pad_top)) * g.W + (ow_begin * g.sw - g.pad_left)) * C;
  float* yrow = y + ((bn * g.OH + oh) * g.OW + ow_begin) * C;
  const float32x4_t lo = vdupq_n_f32(g.lo), hi = vdupq_n_f32(g.hi);
  auto clamp = [&](float32x4_t v) {
    v = vbslq_f32(vcgtq_f32(lo, v), lo, v);
    return vbslq_f32(vcltq_f32(hi, v), hi, v);
  };
  int64_t c = 0;
  for (; c + 4 <= C; c += 4) {
    float32x4_t k[KH * KW];
    for (int t = 0; t < KH * KW; t++) k[t] = vld1q_f32(w + t * C + c);
    const float32x4_t b = bias ? vld1q_f32(bias + c) : vdupq_n_f32(0.f);
    const float* xp = xrow + c;
    float* yp = yrow + c;
    int64_t ow = ow_begin;
    for (; ow + 4 <= ow_end; ow += 4, xp += 4 * step, yp += 4 * C) {
      float32x4_t a0 = b, a1 = b, a2 = b, a3 = b;
      for (int i = 0; i < KH; i++)
        for (int j = 0; j < KW; j++) {
          const float* t = xp + i * tap_step_h + j * tap_step_w;
          const float32x4_t kk = k[i * KW + j];
          a0 = vfmaq_f32(a0, vld1q_f32(t), kk);
          a1 = vfmaq_f32(a1, vld1q_f32(t + step), kk);
          a2 = vfmaq_f32(a2, vld1q_f32(t + 2 * step), kk);
          a3 = vfmaq_f32(a3, vld1q_f32(t + 3 * step), kk);
        }
      vst1q_f32(yp, clamp(a0));
      vst1q_f32(yp + C, clamp(a1));
      vst1q_f32(yp + 2 * C, clamp(a2));
      vst1q_f32(yp + 3 * C, clamp(a3));
    }
    for (; ow < ow_end; ow++, xp += step, yp += C) {
      float32x4_t acc = b;
      for (int i = 0; i < KH; i++)
        for (int j = 0; j < KW; j++) acc = vfmaq_f32(acc, vld1q_f32(xp + i * tap_step_h + j * tap_step_w), k[i * KW + j]);
      vst1q_f32(yp, clamp(acc));
    }
  }
  stationary_channels_scalar(g, xrow, w, bias, yrow, c, ow_begin, ow_end);  // channels past the last vector
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
  if (g.KH == 3 && g.KW == 3 && avx512 && g.dh == 1 && g.dw == 1 && (g.sw == 1 || g.sw == 2))
    fast = g.sw == 1 ? &channel_inner_avx512<3, 3, 1> : &channel_inner_avx512<3, 3, 2>;

  if (g.KH == 5 && g.KW == 5) fast = avx512 ? &stationary_avx512<5, 5> : avx2 ? &stationary_avx2<5, 5> : nullptr;
  auto per_pixel = avx512 ? &row_avx512 : avx2 ? &row_avx2 : &row_generic;
  auto edge = [&](int64_t bn, int64_t oh, int64_t b, int64_t e) {
    if (b < e) per_pixel(g, x, w, bias, y, bn, oh, b, e);
  };
  if (avx2 && !avx512 && g.sw == 1 && g.C % 8 != 0 && ow_lo < ow_hi &&
      lcm_with_8(g.C) * g.KH * g.KW <= 16384) {  // (tiled taps up to 64 KB)
    ETNP_THREAD_LOCAL(FlatTaps, taps);
    tile_taps(g, w, bias, taps);
    for (int64_t r = row_begin; r < row_end; r++) {
      const int64_t bn = r / g.OH, oh = r % g.OH;
      edge(bn, oh, 0, ow_lo);
      flat_row_avx2(g, x, taps, y, bn, oh, ow_lo, ow_hi);
      edge(bn, oh, ow_hi, g.OW);
    }
    return;
  }
  for (int64_t r = row_begin; r < row_end; r++) {
    int64_t bn = r / g.OH, oh = r % g.OH, ih0 = oh * g.sh - g.pad_top;
    bool rows_inside = ih0 >= 0 && ih0 + (g.KH - 1) * g.dh < g.H;
    if (fast && rows_inside && ow_lo < ow_hi) {
      edge(bn, oh, 0, ow_lo);
      fast(g, x, w, bias, y, bn, oh, ow_lo, ow_hi);
      edge(bn, oh, ow_hi, g.OW);
    } else {
      edge(bn, oh, 0, g.OW);
    }
  }
#elif defined(__aarch64__)
  static const bool neon = cpu_has_neon();
  void (*fast)(const DepthwiseGeom&, const float*, const float*, const float*, float*, int64_t, int64_t, int64_t,
               int64_t) = nullptr;
  if (neon && g.KH == 3 && g.KW == 3) fast = &stationary_neon<3, 3>;
  if (neon && g.KH == 5 && g.KW == 5) fast = &stationary_neon<5, 5>;
  for (int64_t r = row_begin; r < row_end; r++) {
    const int64_t bn = r / g.OH, oh = r % g.OH, ih0 = oh * g.sh - g.pad_top;
    const bool rows_inside = ih0 >= 0 && ih0 + (g.KH - 1) * g.dh < g.H;
    if (fast && rows_inside && ow_lo < ow_hi) {
      if (ow_lo > 0) row_generic(g, x, w, bias, y, bn, oh, 0, ow_lo);
      fast(g, x, w, bias, y, bn, oh, ow_lo, ow_hi);
      if (ow_hi < g.OW) row_generic(g, x, w, bias, y, bn, oh, ow_hi, g.OW);
    } else {
      row_generic(g, x, w, bias, y, bn, oh, 0, g.OW);
    }
  }
#else
  for (int64_t r = row_begin; r < row_end; r++) row_generic(g, x, w, bias, y, r / g.OH, r % g.OH, 0, g.OW);
#endif
}

}  // namespace etnp
