// attention_block.h's kernels over an 8-lane type S (V, set1, load, store, add, mul, sum8 - the
// lanes added ((0+4)+(1+5))+((2+6)+(3+7)) -, sum8x4 - four such sums, into out[0..3] - and
// prefetch(p), a hint or nothing): each path's file
// instantiates them with its own S. K and V rows lie kv_stride apart (the other KV heads between
// them): the rows kAhead keys on are prefetched, which the hardware's stream prefetchers miss.
// Included only by attention_block*.cpp, after their target pragmas.
#pragma once
#include <cstdint>

#include "llm/attention_block.h"

namespace etnp {
namespace llm {
namespace block_impl {

constexpr int64_t kAhead = 12;  // keys

// the cache lines of floats [p, p + n)
template <class S>
inline void prefetch_range(const float* p, int64_t n) {
  for (int64_t b = 0; b < n; b += 16) S::prefetch(p + b);
  S::prefetch(p + n - 1);
}

template <class S>
inline float dot(const float* q, const float* k, int64_t D) {
  typename S::V acc = S::set1(0.f);
  int64_t j = 0;
  for (; j + 8 <= D; j += 8) acc = S::add(acc, S::mul(S::load(q + j), S::load(k + j)));
  float s = S::sum8(acc);
  for (; j < D; j++) s += q[j] * k[j];
  return s;
}

// dot4<S> of four keys for NG query heads at once (q, q + D, ...): each K vector loaded once for
// the NG heads (4 * NG sums in registers: 12 of the 16 for NG = 3), the same lanes, adds, sums
// and tail per (head, key) as dot<S>
template <class S, int NG>
inline void dot4_heads(const float* q, const float* k, int64_t stride, int64_t D, float (*out)[4]) {
  typename S::V acc[NG][4];
  for (int g = 0; g < NG; g++)
    for (int t = 0; t < 4; t++) acc[g][t] = S::set1(0.f);
  const float *k0 = k, *k1 = k + stride, *k2 = k + 2 * stride, *k3 = k + 3 * stride;
  int64_t j = 0;
  for (; j + 8 <= D; j += 8) {
    const typename S::V v0 = S::load(k0 + j), v1 = S::load(k1 + j), v2 = S::load(k2 + j), v3 = S::load(k3 + j);
    for (int g = 0; g < NG; g++) {
      const typename S::V qv = S::load(q + g * D + j);
      acc[g][0] = S::add(acc[g][0], S::mul(qv, v0));
      acc[g][1] = S::add(acc[g][1], S::mul(qv, v1));
      acc[g][2] = S::add(acc[g][2], S::mul(qv, v2));
      acc[g][3] = S::add(acc[g][3], S::mul(qv, v3));
    }
  }
  for (int g = 0; g < NG; g++) {
    S::sum8x4(acc[g][0], acc[g][1], acc[g][2], acc[g][3], out[g]);
    for (int64_t i = j; i < D; i++) {
      const float qi = q[g * D + i];
      out[g][0] += qi * k0[i];
      out[g][1] += qi * k1[i];
      out[g][2] += qi * k2[i];
      out[g][3] += qi * k3[i];
    }
  }
}

template <class S, int NG>
inline void scores_4keys(const ScoreBlock& a, int64_t j0, int64_t g0) {
  float d[NG][4];
  dot4_heads<S, NG>(a.q + g0 * a.head_dim, a.k + j0 * a.kv_stride, a.kv_stride, a.head_dim, d);
  for (int g = 0; g < NG; g++)
    for (int t = 0; t < 4; t++) {
      float sc = d[g][t] * a.scale;
      if (a.mask) sc += a.mask[j0 + t];
      a.s[(g0 + g) * a.ld + j0 + t] = sc;
    }
}

template <class S>
void scores(const ScoreBlock& a) {
  const int64_t G = a.groups, D = a.head_dim;
  int64_t j0 = 0;
  for (; j0 + 4 <= a.n; j0 += 4) {  // keys four at a time, up to 3 query heads at a time
    const float* kr = a.k + j0 * a.kv_stride;
    for (int64_t t = 0; t < 4 && j0 + t + kAhead < a.n; t++) prefetch_range<S>(kr + (t + kAhead) * a.kv_stride, D);
    for (int64_t g0 = 0; g0 < G; g0 += 3) {
      if (G - g0 >= 3) scores_4keys<S, 3>(a, j0, g0);
      else if (G - g0 == 2) scores_4keys<S, 2>(a, j0, g0);
      else scores_4keys<S, 1>(a, j0, g0);
    }
  }
  for (int64_t j = j0; j < a.n; j++) {
    const float* kr = a.k + j * a.kv_stride;
    if (j + kAhead < a.n) prefetch_range<S>(kr + kAhead * a.kv_stride, D);
    for (int64_t g = 0; g < G; g++) {
      float sc = dot<S>(a.q + g * D, kr, D) * a.scale;
      if (a.mask) sc += a.mask[j];
      a.s[g * a.ld + j] = sc;
    }
  }
}

// values for a range of 4 vectors (32 floats) and query heads g0 .. g0 + NG - 1: their sums held
// in registers over the keys (loaded from out first, stored after) - the same multiply and add per
// weight, keys in order - instead of out's floats loaded and stored again for every key
template <class S, int NG>
void values_4v(const ValueSums& a, int64_t g0) {
  using V = typename S::V;
  V acc[NG][4];
  for (int g = 0; g < NG; g++)
    for (int c = 0; c < 4; c++) acc[g][c] = S::load(a.out + (g0 + g) * a.head_dim + a.d0 + 8 * c);
  for (int64_t j = 0; j < a.n; j++) {
    const float* vr = a.v + j * a.kv_stride + a.d0;
    if (j + kAhead < a.n) prefetch_range<S>(vr + kAhead * a.kv_stride, 32);
    for (int g = 0; g < NG; g++) {
      const float w = a.w[(g0 + g) * a.ld + j];
      if (w == 0.f) continue;
      const V vw = S::set1(w);
      for (int c = 0; c < 4; c++) acc[g][c] = S::add(acc[g][c], S::mul(vw, S::load(vr + 8 * c)));
    }
  }
  for (int g = 0; g < NG; g++)
    for (int c = 0; c < 4; c++) S::store(a.out + (g0 + g) * a.head_dim + a.d0 + 8 * c, acc[g][c]);
}

template <class S>
void values(const ValueSums& a) {
  const int64_t G = a.groups, d0 = a.d0, d1 = a.d1;
  if (d1 - d0 == 32) {  // (attention_f32's whole chunks) up to 3 heads at a time: 12 sums in registers
    for (int64_t g0 = 0; g0 < G; g0 += 3) {
      if (G - g0 >= 3) values_4v<S, 3>(a, g0);
      else if (G - g0 == 2) values_4v<S, 2>(a, g0);
      else values_4v<S, 1>(a, g0);
    }
    return;
  }
  for (int64_t j = 0; j < a.n; j++) {
    const float* vr = a.v + j * a.kv_stride;
    if (j + kAhead < a.n && d1 > d0) prefetch_range<S>(vr + kAhead * a.kv_stride + d0, d1 - d0);
    for (int64_t g = 0; g < G; g++) {
      const float w = a.w[g * a.ld + j];
      if (w == 0.f) continue;
      float* o = a.out + g * a.head_dim;
      const typename S::V vw = S::set1(w);
      int64_t d = d0;
      for (; d + 8 <= d1; d += 8) S::store(o + d, S::add(S::load(o + d), S::mul(vw, S::load(vr + d))));
      for (; d < d1; d++) o[d] += w * vr[d];
    }
  }
}

}  // namespace block_impl
}  // namespace llm
}  // namespace etnp
