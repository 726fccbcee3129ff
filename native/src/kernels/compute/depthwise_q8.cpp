#include "kernels/compute/depthwise_q8.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/depthwise_q8_generic.h"
#include "os/thread_slot.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

constexpr int64_t kLanes = 16;  // channels are padded to a multiple of this in the packed filter

int64_t padded_channels(int64_t C) { return (C + kLanes - 1) / kLanes * kLanes; }

// The taps of an output pixel that fall inside the input (those in the padding add nothing: their
// codes minus the code of 0 are 0): tap k reads rows[k] (+ p * xstep for the p-th of a run of
// pixels) with the filter's row wrow[k] (tap index * the padded channel count).
struct Taps {
  const uint8_t* rows[kMaxDwQ8Taps];
  int64_t wrow[kMaxDwQ8Taps];
  int64_t n = 0;
};

#if defined(__x86_64__)
// 16 codes at p minus the code of 0, as float32 (exact)
ETNP_TARGET_INLINE("avx512f") __m512 centred16(const uint8_t* p, __m512i pz) {
  return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)p)), pz));
}
ETNP_TARGET_INLINE("avx2,fma") __m256 centred8(const uint8_t* p, __m256i pz) {
  return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p)), pz));
}
// The epilogue of 16 channels from c: sx * sw[c] * acc + bias[c], clamped to `bounds` (g.lo, g.hi
// and the output grid's: q8_bounds16), stored (q8_output.h).
ETNP_TARGET_INLINE("avx512f") void finish16(const DepthwiseGeom& g, const PackedDwQ8& w, const DwQ8Input& x,
                                             const float* bias, const QOutput& out, const Q8Bounds16& bounds,
                                             int64_t o, int64_t c, __m512 acc) {
  const int64_t cols = std::min<int64_t>(16, g.C - c);
  const __mmask16 mask = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
  const __m512 s = _mm512_mul_ps(_mm512_set1_ps(x.scale), _mm512_loadu_ps(w.scale.data() + c));
  const __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias + c) : _mm512_setzero_ps();
  if (!w.bias_q.empty())  // (the sum, an exact integer, plus the integer bias: one rounding, as XNNPACK's)
    acc = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_cvtps_epi32(acc), _mm512_loadu_si512(w.bias_q.data() + c)));
  const __m512 r = _mm512_fmadd_ps(acc, s, b);
  store_q8_16(out, o + c, cols, mask, r, bounds);
}

// P output pixels (outputs o, o + step, ...; pixel p's tap k reads t.rows[k] + p * xstep), 16
// channels at a time from c_begin: P independent accumulators share each weight load. The last
// partial block of channels reads codes past the channels (the next pixel's, or the slack past
// the end), which meet zero weights.
template <int P>
ETNP_TARGET("avx512f") void pixels_avx512(const DepthwiseGeom& g, const Taps& t, const PackedDwQ8& w,
                                          const DwQ8Input& x, const float* bias, const QOutput& out, int64_t o,
                                          int64_t step, int64_t xstep, int64_t c_begin = 0) {
  const __m512i pz = _mm512_set1_epi32(x.pad_code);
  const Q8Bounds16 bounds = q8_bounds16(out, g.lo, g.hi);
  for (int64_t c0 = c_begin; c0 < g.C; c0 += 16) {
    __m512 acc[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) acc[p] = _mm512_setzero_ps();
    for (int64_t k = 0; k < t.n; k++) {
      const __m512 wv = _mm512_loadu_ps(w.w.data() + t.wrow[k] + c0);
#pragma GCC unroll 4
      for (int p = 0; p < P; p++) acc[p] = _mm512_fmadd_ps(centred16(t.rows[k] + p * xstep + c0, pz), wv, acc[p]);
    }
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) finish16(g, w, x, bias, out, bounds, o + p * step, c0, acc[p]);
  }
}
ETNP_TARGET("avx512f") void pixels4_avx512(const DepthwiseGeom& g, const Taps& t, const PackedDwQ8& w,
                                           const DwQ8Input& x, const float* bias, const QOutput& out, int64_t o,
                                           int64_t step, int64_t xstep) {
  pixels_avx512<4>(g, t, w, x, bias, out, o, step, xstep);
}

// One output pixel, 64 channels a step (four independent accumulators: one accumulator's chain of
// FMAs would wait on itself), then 16 at a time.
ETNP_TARGET("avx512f") void pixel_avx512(const DepthwiseGeom& g, const Taps& t, const PackedDwQ8& w,
                                         const DwQ8Input& x, const float* bias, const QOutput& out, int64_t o,
                                         int64_t step, int64_t xstep) {
  const __m512i pz = _mm512_set1_epi32(x.pad_code);
  const Q8Bounds16 bounds = q8_bounds16(out, g.lo, g.hi);
  int64_t c0 = 0;
  for (; c0 + 64 <= g.C; c0 += 64) {
    __m512 acc[4];
#pragma GCC unroll 4
    for (int b = 0; b < 4; b++) acc[b] = _mm512_setzero_ps();
    for (int64_t k = 0; k < t.n; k++) {
      const float* wk = w.w.data() + t.wrow[k] + c0;
#pragma GCC unroll 4
      for (int b = 0; b < 4; b++)
        acc[b] = _mm512_fmadd_ps(centred16(t.rows[k] + c0 + 16 * b, pz), _mm512_loadu_ps(wk + 16 * b), acc[b]);
    }
#pragma GCC unroll 4
    for (int b = 0; b < 4; b++) finish16(g, w, x, bias, out, bounds, o, c0 + 16 * b, acc[b]);
  }
  if (c0 < g.C) pixels_avx512<1>(g, t, w, x, bias, out, o, step, xstep, c0);
}

// kPixels (4) output pixels side by side (stride SW, KW taps a kernel row, dilation 1): each input
// column of a kernel row is widened once and serves every pixel that reads it. Kernel row k (of
// t.n: those inside the input's height) has its NC columns at t.rows[k * NC + q] (a column in the
// padding: codes of 0) and filter row t.wrow[k] (its first tap).
template <int KW, int SW>
ETNP_TARGET("avx512f") void window_avx512(const DepthwiseGeom& g, const Taps& t, const PackedDwQ8& w,
                                          const DwQ8Input& x, const float* bias, const QOutput& out, int64_t o,
                                          int64_t step) {
  constexpr int P = 4, NC = (P - 1) * SW + KW;
  const __m512i pz = _mm512_set1_epi32(x.pad_code);
  const Q8Bounds16 bounds = q8_bounds16(out, g.lo, g.hi);
  const int64_t C = g.C, ldw = padded_channels(C);
  for (int64_t c0 = 0; c0 < C; c0 += 16) {
    __m512 acc[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) acc[p] = _mm512_setzero_ps();
    for (int64_t k = 0; k < t.n; k++) {
      __m512 xf[NC];
#pragma GCC unroll 16
      for (int q = 0; q < NC; q++) xf[q] = centred16(t.rows[k * NC + q] + c0, pz);
      const float* wk = w.w.data() + t.wrow[k] + c0;
#pragma GCC unroll 8
      for (int j = 0; j < KW; j++) {
        const __m512 wv = _mm512_loadu_ps(wk + j * ldw);
#pragma GCC unroll 4
        for (int p = 0; p < P; p++) acc[p] = _mm512_fmadd_ps(xf[p * SW + j], wv, acc[p]);
      }
    }
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) finish16(g, w, x, bias, out, bounds, o + p * step, c0, acc[p]);
  }
}

// The epilogue of 8 channels from c (`cols` <= 8 of them): as finish16.
ETNP_TARGET_INLINE("avx2,fma") void finish8(const DepthwiseGeom& g, const PackedDwQ8& w, const DwQ8Input& x,
                                            const float* bias, const QOutput& out, const Q8Bounds8& bounds,
                                            int64_t o, int64_t c, __m256 acc) {
  const int64_t cols = std::min<int64_t>(8, g.C - c);
  const __m256 s = _mm256_mul_ps(_mm256_set1_ps(x.scale), _mm256_loadu_ps(w.scale.data() + c));
  if (!w.bias_q.empty())  // (as finish16)
    acc = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_cvtps_epi32(acc), _mm256_loadu_si256((const __m256i*)(w.bias_q.data() + c))));
  __m256 b = _mm256_setzero_ps();
  if (bias) {
    if (cols >= 8) {
      b = _mm256_loadu_ps(bias + c);
    } else {
      alignas(32) float tmp[8] = {};
      std::memcpy(tmp, bias + c, (size_t)cols * sizeof(float));
      b = _mm256_load_ps(tmp);
    }
  }
  store_q8_8(out, o + c, cols, _mm256_fmadd_ps(acc, s, b), bounds);
}

// The same as pixels_avx512, 8 channels at a time.
template <int P>
ETNP_TARGET("avx2,fma") void pixels_avx2(const DepthwiseGeom& g, const Taps& t, const PackedDwQ8& w,
                                         const DwQ8Input& x, const float* bias, const QOutput& out, int64_t o,
                                         int64_t step, int64_t xstep) {
  const __m256i pz = _mm256_set1_epi32(x.pad_code);
  const Q8Bounds8 bounds = q8_bounds8(out, g.lo, g.hi);
  for (int64_t c0 = 0; c0 < g.C; c0 += 8) {
    __m256 acc[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) acc[p] = _mm256_setzero_ps();
    for (int64_t k = 0; k < t.n; k++) {
      const __m256 wv = _mm256_loadu_ps(w.w.data() + t.wrow[k] + c0);
#pragma GCC unroll 4
      for (int p = 0; p < P; p++) acc[p] = _mm256_fmadd_ps(centred8(t.rows[k] + p * xstep + c0, pz), wv, acc[p]);
    }
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) finish8(g, w, x, bias, out, bounds, o + p * step, c0, acc[p]);
  }
}

// The same as window_avx512, 8 channels at a time (a 5-wide stride-2 window's 11 input columns,
// 4 accumulators and a weight fill the 16 registers).
template <int KW, int SW>
ETNP_TARGET("avx2,fma") void window_avx2(const DepthwiseGeom& g, const Taps& t, const PackedDwQ8& w,
                                         const DwQ8Input& x, const float* bias, const QOutput& out, int64_t o,
                                         int64_t step) {
  constexpr int P = 4, NC = (P - 1) * SW + KW;
  const __m256i pz = _mm256_set1_epi32(x.pad_code);
  const Q8Bounds8 bounds = q8_bounds8(out, g.lo, g.hi);
  const int64_t C = g.C, ldw = padded_channels(C);
  for (int64_t c0 = 0; c0 < C; c0 += 8) {
    __m256 acc[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) acc[p] = _mm256_setzero_ps();
    for (int64_t k = 0; k < t.n; k++) {
      __m256 xf[NC];
#pragma GCC unroll 16
      for (int q = 0; q < NC; q++) xf[q] = centred8(t.rows[k * NC + q] + c0, pz);
      const float* wk = w.w.data() + t.wrow[k] + c0;
#pragma GCC unroll 8
      for (int j = 0; j < KW; j++) {
        const __m256 wv = _mm256_loadu_ps(wk + j * ldw);
#pragma GCC unroll 4
        for (int p = 0; p < P; p++) acc[p] = _mm256_fmadd_ps(xf[p * SW + j], wv, acc[p]);
      }
    }
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) finish8(g, w, x, bias, out, bounds, o + p * step, c0, acc[p]);
  }
}
#endif

using PixelsFn = void (*)(const DepthwiseGeom&, const Taps&, const PackedDwQ8&, const DwQ8Input&, const float*,
                          const QOutput&, int64_t, int64_t, int64_t);
using WindowFn = void (*)(const DepthwiseGeom&, const Taps&, const PackedDwQ8&, const DwQ8Input&, const float*,
                          const QOutput&, int64_t, int64_t);
constexpr int kPixels = 4;  // output pixels a step where their taps lie inside the width (then one at a time)
struct Kernels {
  PixelsFn four, one;
  WindowFn window[2][2];  // [KW 3, 5][stride 1, 2] (dilation 1), where the CPU path has them
};
Kernels pixel_kernels() {
#if defined(__x86_64__)
  if (cpu_has_avx512f())
    return {&pixels4_avx512, &pixel_avx512,
            {{&window_avx512<3, 1>, &window_avx512<3, 2>}, {&window_avx512<5, 1>, &window_avx512<5, 2>}}};
  if (cpu_has_avx2_fma())
    return {&pixels_avx2<kPixels>, &pixels_avx2<1>,
            {{&window_avx2<3, 1>, &window_avx2<3, 2>}, {&window_avx2<5, 1>, &window_avx2<5, 2>}}};
#endif
  return {nullptr, nullptr, {}};  // (the portable path: depthwise_q8_generic)
}

}  // namespace

PackedDwQ8 pack_dw_q8(int64_t taps, int64_t C, const int8_t* w, const float* scales) {
  PackedDwQ8 p;
  p.taps = taps;
  p.C = C;
  const int64_t Cp = padded_channels(C);
  p.w.assign((size_t)(taps * Cp), 0.f);
  p.scale.assign((size_t)Cp, 0.f);
  for (int64_t c = 0; c < C; c++) {
    for (int64_t t = 0; t < taps; t++) p.w[(size_t)(t * Cp + c)] = (float)w[t * C + c];
    p.scale[(size_t)c] = scales[c];
  }
  return p;
}

void depthwise_q8(const DepthwiseGeom& g, const DwQ8Input& x, const PackedDwQ8& w, const float* bias,
                  const QOutput& out, int64_t row_begin, int64_t row_end) {
  static const Kernels k = pixel_kernels();
  if (w.taps != g.KH * g.KW || w.C != g.C || w.taps > kMaxDwQ8Taps || w.taps <= 0) return;  // (the caller checks)
  if (!k.four) return depthwise_q8_generic(g, x, w, bias, out, row_begin, row_end);
  const int64_t ldw = padded_channels(g.C), xstep = g.sw * g.C;
  const WindowFn window = g.dw == 1 && (g.KW == 3 || g.KW == 5) && (g.sw == 1 || g.sw == 2)
                              ? k.window[g.KW == 5][g.sw == 2] : nullptr;
  const int64_t ncols = (kPixels - 1) * g.sw + g.KW;  // a window's input columns (dilation 1)
  ETNP_THREAD_LOCAL(std::vector<uint8_t>, pad);              // C codes of 0 (and the vector paths' slack)
  if (window) pad.assign((size_t)(g.C + kDwQ8CodeSlack), (uint8_t)x.pad_code);
  Taps t;
  const uint8_t* vrow[kMaxDwQ8Taps];  // per kernel row: the input row it reads, null in the padding
  for (int64_t r = row_begin; r < row_end; r++) {
    const int64_t bn = r / g.OH, oh = r % g.OH;
    for (int64_t i = 0; i < g.KH; i++) {
      const int64_t ih = oh * g.sh - g.pad_top + i * g.dh;
      vrow[i] = ih >= 0 && ih < g.H ? x.codes + (bn * g.H + ih) * g.W * g.C : nullptr;
    }
    for (int64_t ow = 0; ow < g.OW;) {
      const int64_t iw0 = ow * g.sw - g.pad_left;
      const int64_t o = (r * g.OW + ow) * out.ldc;
      t.n = 0;
      if (window && ow + kPixels <= g.OW) {  // kPixels pixels: per kernel row inside the height, its columns
        for (int64_t i = 0; i < g.KH; i++) {
          if (!vrow[i]) continue;
          for (int64_t q = 0; q < ncols; q++) {
            const int64_t iw = iw0 + q;
            t.rows[t.n * ncols + q] = iw >= 0 && iw < g.W ? vrow[i] + iw * g.C : pad.data();
          }
          t.wrow[t.n++] = i * g.KW * ldw;
        }
        window(g, t, w, x, bias, out, o, out.ldc);
        ow += kPixels;
      } else if (ow + kPixels <= g.OW && iw0 >= 0 && iw0 + (kPixels - 1) * g.sw + (g.KW - 1) * g.dw < g.W) {
        // kPixels pixels, every tap inside the width
        for (int64_t i = 0; i < g.KH; i++)
          for (int64_t j = 0; vrow[i] && j < g.KW; j++) {
            t.rows[t.n] = vrow[i] + (iw0 + j * g.dw) * g.C;
            t.wrow[t.n++] = (i * g.KW + j) * ldw;
          }
        k.four(g, t, w, x, bias, out, o, out.ldc, xstep);
        ow += kPixels;
      } else {
        for (int64_t i = 0; i < g.KH; i++)
          for (int64_t j = 0; vrow[i] && j < g.KW; j++) {
            const int64_t iw = iw0 + j * g.dw;
            if (iw < 0 || iw >= g.W) continue;
            t.rows[t.n] = vrow[i] + iw * g.C;
            t.wrow[t.n++] = (i * g.KW + j) * ldw;
          }
        k.one(g, t, w, x, bias, out, o, out.ldc, 0);
        ow++;
      }
    }
  }
}

}  // namespace etnp
