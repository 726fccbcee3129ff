// attention_block's algorithm (attention_block.h) over a vector-lane type S: each ISA's file
// instantiates block<S> with its own S (V, W, set1, load, store, add, fmadd, hsum_f32).
// Included only by attention_block*.cpp, after their target pragmas.
#pragma once
#include <cstdint>
#include <limits>

#include "kernels/compute/vec_math.h"
#include "llm/attention_block.h"

namespace etnp {
namespace llm {
namespace block_impl {

// sum_d q[d] k[d]: two vector accumulators, then the scalar tail
template <class S>
inline float dot(const float* q, const float* k, int64_t D) {
  using V = typename S::V;
  constexpr int W = S::W;
  V a0 = S::set1(0.f), a1 = S::set1(0.f);
  int64_t d = 0;
  for (; d + 2 * W <= D; d += 2 * W) {
    a0 = S::fmadd(S::load(q + d), S::load(k + d), a0);
    a1 = S::fmadd(S::load(q + d + W), S::load(k + d + W), a1);
  }
  if (d + W <= D) {
    a0 = S::fmadd(S::load(q + d), S::load(k + d), a0);
    d += W;
  }
  float s = S::hsum_f32(S::add(a0, a1));
  for (; d < D; d++) s += q[d] * k[d];
  return s;
}

// y += w x over D floats
template <class S>
inline void axpy(float w, const float* x, float* y, int64_t D) {
  constexpr int W = S::W;
  const typename S::V vw = S::set1(w);
  int64_t d = 0;
  for (; d + W <= D; d += W) S::store(y + d, S::fmadd(vw, S::load(x + d), S::load(y + d)));
  for (; d < D; d++) y[d] += w * x[d];
}

template <class S>
inline float sum(const float* x, int64_t n) {
  constexpr int W = S::W;
  typename S::V a = S::set1(0.f);
  int64_t j = 0;
  for (; j + W <= n; j += W) a = S::add(a, S::load(x + j));
  float s = S::hsum_f32(a);
  for (; j < n; j++) s += x[j];
  return s;
}

template <class S>
void block(const AttnBlock& a) {
  const int64_t G = a.groups, D = a.head_dim, n = a.n;
  float* sc = a.scores;
  for (int64_t j = 0; j < n; j++) {  // the scores: each key row once for the G query rows
    const float* kr = a.k + j * a.kv_stride;
    for (int64_t g = 0; g < G; g++) {
      float s = dot<S>(a.q + g * D, kr, D) * a.scale;
      if (a.mask) s += a.mask[j];
      sc[g * n + j] = s;
    }
  }
  for (int64_t g = 0; g < G; g++) {  // the numerators e^(s - m) in place, and their sum
    float* s = sc + g * n;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; j++) mx = s[j] > mx ? s[j] : mx;
    a.m[g] = mx;
    if (!(mx > -std::numeric_limits<float>::infinity())) {  // every key masked: weights 0
      for (int64_t j = 0; j < n; j++) s[j] = 0.f;
      a.l[g] = 0.f;
      continue;
    }
    for (int64_t j = 0; j < n; j++) s[j] -= mx;
    vec_exp(s, s, n);
    a.l[g] = sum<S>(s, n);
  }
  float* acc = a.acc;
  for (int64_t i = 0; i < G * D; i++) acc[i] = 0.f;
  for (int64_t j = 0; j < n; j++) {  // the weighted values: each value row once for the G rows
    const float* vr = a.v + j * a.kv_stride;
    for (int64_t g = 0; g < G; g++) {
      const float w = sc[g * n + j];
      if (w != 0.f) axpy<S>(w, vr, acc + g * D, D);
    }
  }
}

}  // namespace block_impl
}  // namespace llm
}  // namespace etnp
