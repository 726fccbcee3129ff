// float32 layer-norm rows, bit-identical to the reference runtime (the published wheel's
// ExecuTorch 1.3.1 optimized native_layer_norm.out, determined empirically against it: widths
// 1..5000, rows 1..128, offsets and scales from 0.01 to 100 all match bit for bit).
//
// What the reference computes, for a row of N floats (all arithmetic float32, one rounding per
// operation, no fused multiply-adds; its ATen Vectorized<float> is the generic 8-lane one, as
// the CMake build defines no CPU_CAPABILITY):
//
//  N < 256 (the "small N" scalar path):
//    sum = x0 + x1 + ... (left to right), sq = x0*x0 + x1*x1 + ... (left to right),
//    mean = sum / N, var = sq / N - mean*mean, std = sqrt(var + eps),
//    y = (x - mean) / std * w + b; mean_out = mean, rstd_out = float(1.0 / double(std)).
//
//  N >= 256 (RowwiseMoments, a cascaded parallel Welford over 8 lanes):
//    n = N / 8 vectors, taken in chunks of 16 vectors; each chunk runs a per-lane Welford from
//    zero (d = x - m1; m1 += d * (1/(j+1)); m2 += d * (x - m1)), and is merged into a binary
//    cascade of accumulators (AddMomentsVec: c = m0_add / n; delta = m1_add - m1;
//    m1 += c * delta; m2 += m2_add + delta*delta*c*m0) in ExecuTorch's stack order; then the
//    N % 8 tail elements run a scalar Welford (m1 += delta / count) and the 8 lanes are merged
//    into it one by one (AddMoments); var = m2 / N, rstd = 1 / sqrt(var + eps),
//    y = (x * rstd + (-rstd * mean)) * w + b; mean_out = mean, rstd_out = rstd.
//
// The portable code below spells out the 8 lanes as arrays; the AVX2 code does the same
// operations on __m256 (several independent chunks interleaved for throughput): the same bits
// on every path. Contraction into fused multiply-adds is switched off for this file, which
// would otherwise change them (GCC contracts by default, and clang does on aarch64).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/compute/layer_norm_f32.h"

#include <algorithm>
#include <cmath>

#include "kernels/compute/cpu_features.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

constexpr int kLanes = 8;           // Vectorized<float>::size() in the reference's build
constexpr int64_t kChunk = 16;      // moments_utils.h kChunkSize
constexpr int64_t kSmallN = 256;    // op_native_layer_norm.cpp kSmallNThreshold
constexpr int kGroup = 6;           // chunks computed together (independent until merged)

// 1 / (j + 1) in float, as the reference's c_vecs
struct ChunkCoeffs {
  float c[kChunk];
  ChunkCoeffs() {
    for (int64_t j = 0; j < kChunk; j++) c[j] = 1.f / static_cast<float>(j + 1);
  }
};
const ChunkCoeffs kCoeffs;

struct LaneMoments {
  int64_t m0;
  float m1[kLanes], m2[kLanes];
  void clear() {
    m0 = 0;
    for (int l = 0; l < kLanes; l++) m1[l] = m2[l] = 0.f;
  }
};

// AddMomentsVec
inline void add_moments_vec(int64_t m0_add, const float* m1_add, const float* m2_add, LaneMoments& a) {
  const int64_t n = a.m0 + m0_add;
  const float c = n == 0 ? 0.f : static_cast<float>(m0_add) / static_cast<float>(n);
  const float fm0 = static_cast<float>(a.m0);
  for (int l = 0; l < kLanes; l++) {
    const float delta = m1_add[l] - a.m1[l];
    a.m1[l] = a.m1[l] + c * delta;
    const float t = delta * delta;
    const float t2 = t * c;
    const float t3 = t2 * fm0;
    a.m2[l] = a.m2[l] + (m2_add[l] + t3);
  }
  a.m0 = n;
}

// Welford over `m0` vectors of K chunks side by side, each from zero (UpdateMomentsVec's loop):
// chunk k starts at x + k * kChunk * kLanes. The lanes are arrays (loops the compiler vectorises),
// the K chunks independent chains (one chunk's Welford waits on itself every step).
template <int K>
void chunks_portable(const float* x, int64_t m0, float (*m1)[kLanes], float (*m2)[kLanes]) {
  float a1[K][kLanes] = {}, a2[K][kLanes] = {};
  for (int64_t j = 0; j < m0; j++) {
    const float c = kCoeffs.c[j];
    for (int k = 0; k < K; k++)
      for (int l = 0; l < kLanes; l++) {
        const float xv = x[(k * kChunk + j) * kLanes + l];
        const float d = xv - a1[k][l];
        a1[k][l] = a1[k][l] + d * c;
        a2[k][l] = a2[k][l] + d * (xv - a1[k][l]);
      }
  }
  for (int k = 0; k < K; k++)
    for (int l = 0; l < kLanes; l++) m1[k][l] = a1[k][l], m2[k][l] = a2[k][l];
}

void chunks_portable(int k, const float* x, int64_t m0, float (*m1)[kLanes], float (*m2)[kLanes]) {
  for (; k >= 3; k -= 3, x += 3 * kChunk * kLanes, m1 += 3, m2 += 3) chunks_portable<3>(x, m0, m1, m2);
  if (k == 2) chunks_portable<2>(x, m0, m1, m2);
  if (k == 1) chunks_portable<1>(x, m0, m1, m2);
}

#if defined(__x86_64__)
// K full-or-partial chunks side by side: chunk k starts at x + k * kChunk * kLanes, runs m0 vectors
template <int K>
ETNP_TARGET("avx2") void chunks_avx2(const float* x, int64_t m0, float (*m1o)[kLanes], float (*m2o)[kLanes]) {
  __m256 m1[K], m2[K];
  for (int k = 0; k < K; k++) m1[k] = m2[k] = _mm256_setzero_ps();
  for (int64_t j = 0; j < m0; j++) {
    const __m256 c = _mm256_set1_ps(kCoeffs.c[j]);
    for (int k = 0; k < K; k++) {
      const __m256 xv = _mm256_loadu_ps(x + (k * kChunk + j) * kLanes);
      const __m256 d = _mm256_sub_ps(xv, m1[k]);
      m1[k] = _mm256_add_ps(m1[k], _mm256_mul_ps(d, c));
      m2[k] = _mm256_add_ps(m2[k], _mm256_mul_ps(d, _mm256_sub_ps(xv, m1[k])));
    }
  }
  for (int k = 0; k < K; k++) {
    _mm256_storeu_ps(m1o[k], m1[k]);
    _mm256_storeu_ps(m2o[k], m2[k]);
  }
}

void chunks_simd(int k, const float* x, int64_t m0, float (*m1o)[kLanes], float (*m2o)[kLanes]) {
  switch (k) {
    case 1: chunks_avx2<1>(x, m0, m1o, m2o); break;
    case 2: chunks_avx2<2>(x, m0, m1o, m2o); break;
    case 3: chunks_avx2<3>(x, m0, m1o, m2o); break;
    case 4: chunks_avx2<4>(x, m0, m1o, m2o); break;
    case 5: chunks_avx2<5>(x, m0, m1o, m2o); break;
    default: chunks_avx2<6>(x, m0, m1o, m2o); break;
  }
}

ETNP_TARGET("avx2") int64_t affine_avx2(const float* x, int64_t n, float scale, float offset, const float* w,
                                        const float* b, float* y) {
  const __m256 sc = _mm256_set1_ps(scale), of = _mm256_set1_ps(offset), one = _mm256_set1_ps(1.f),
               zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), sc), of);
    const __m256 wv = w ? _mm256_loadu_ps(w + i) : one;
    const __m256 bv = b ? _mm256_loadu_ps(b + i) : zero;
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_mul_ps(t, wv), bv));
  }
  return i;
}
#endif

// RowwiseMoments (ddof 0): mean and biased variance
void row_moments(const float* X, int64_t N, bool simd, float& mean, float& var) {
  const int64_t n = N / kLanes;
  const int64_t m = (n + kChunk - 1) / kChunk;
  int depth = 1;  // CeilLog2(m), 1 for m <= 2
  if (m > 2) {
    depth = 0;
    for (uint64_t v = static_cast<uint64_t>(m - 1); v; v >>= 1) depth++;
  }
  LaneMoments stk[64];
  for (int i = 0; i < depth; i++) stk[i].clear();
  float r1[kGroup][kLanes], r2[kGroup][kLanes];
  for (int64_t i0 = 0; i0 < m; i0 += kGroup) {
    const int g = static_cast<int>(std::min<int64_t>(kGroup, m - i0));
    // all chunks of the group are full but perhaps the row's last one
    const int64_t last_m0 = std::min(kChunk, n - (i0 + g - 1) * kChunk);
    const int full = last_m0 == kChunk ? g : g - 1;
    const float* xg = X + i0 * kChunk * kLanes;
#if defined(__x86_64__)
    if (simd) {
      if (full) chunks_simd(full, xg, kChunk, r1, r2);
      if (full < g) chunks_simd(1, xg + full * kChunk * kLanes, last_m0, r1 + full, r2 + full);
    } else
#endif
    {
      (void)simd;
      if (full) chunks_portable(full, xg, kChunk, r1, r2);
      if (full < g) chunks_portable(1, xg + full * kChunk * kLanes, last_m0, r1 + full, r2 + full);
    }
    for (int k = 0; k < g; k++) {
      const int64_t i = i0 + k;
      add_moments_vec(std::min(kChunk, n - i * kChunk), r1[k], r2[k], stk[0]);
      int64_t mask = i + 1;
      for (int j = 1; j < depth && (mask & 1) == 0; ++j) {
        add_moments_vec(stk[j - 1].m0, stk[j - 1].m1, stk[j - 1].m2, stk[j]);
        stk[j - 1].clear();
        mask >>= 1;
      }
    }
  }
  for (int i = 1; i < depth; ++i) add_moments_vec(stk[i].m0, stk[i].m1, stk[i].m2, stk[0]);

  int64_t m0 = 0;
  float m1 = 0.f, m2 = 0.f;
  for (int64_t i = n * kLanes; i < N; ++i) {
    const float x = X[i];
    const float delta = x - m1;
    ++m0;
    m1 = m1 + delta / static_cast<float>(m0);
    m2 = m2 + delta * (x - m1);
  }
  for (int l = 0; l < kLanes; ++l) {  // AddMoments(n, lane l) into the tail's moments
    const int64_t nn = m0 + n;
    const float c = nn == 0 ? 0.f : static_cast<float>(n) / static_cast<float>(nn);
    const float delta = stk[0].m1[l] - m1;
    m1 = m1 + c * delta;
    const float t = delta * delta;
    const float t2 = t * c;
    const float t3 = t2 * static_cast<float>(m0);
    m2 = m2 + (stk[0].m2[l] + t3);
    m0 = nn;
  }
  mean = m1;
  var = m2 / static_cast<float>(N);
}

// layer_norm_scalar's sums for K rows side by side (each row's sums stay sequential, left to right)
template <int K>
void small_sums(const float* x, int64_t N, float* mean, float* sd, float epsf) {
  float sum[K], sq[K];
  for (int k = 0; k < K; k++) sum[k] = sq[k] = 0.f;
  for (int64_t j = 0; j < N; j++)
    for (int k = 0; k < K; k++) {
      const float v = x[k * N + j];
      sum[k] = sum[k] + v;
      sq[k] = sq[k] + v * v;
    }
  for (int k = 0; k < K; k++) {
    mean[k] = sum[k] / static_cast<float>(N);
    const float var = sq[k] / static_cast<float>(N) - mean[k] * mean[k];
    sd[k] = std::sqrt(var + epsf);
  }
}

#if defined(__x86_64__)
ETNP_TARGET("avx2") int64_t small_out_avx2(const float* x, int64_t n, float mean, float sd, const float* w,
                                           const float* b, float* y) {
  const __m256 mv = _mm256_set1_ps(mean), sv = _mm256_set1_ps(sd), one = _mm256_set1_ps(1.f),
               zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 t = _mm256_div_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv), sv);
    const __m256 wv = w ? _mm256_loadu_ps(w + i) : one;
    const __m256 bv = b ? _mm256_loadu_ps(b + i) : zero;
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_mul_ps(t, wv), bv));
  }
  return i;
}
#endif

}  // namespace

void layer_norm_rows_f32(const float* x, int64_t rows, int64_t N, const float* w, const float* b, double eps, float* y,
                         float* mean_out, float* rstd_out) {
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
#else
  const bool avx2 = false;
#endif
  const float epsf = static_cast<float>(eps);
  if (N <= 0) {
    for (int64_t r = 0; r < rows; r++) {
      if (mean_out) mean_out[r] = 0.f;
      if (rstd_out) rstd_out[r] = NAN;
    }
    return;
  }
  if (N < kSmallN) {  // layer_norm_scalar (normalization_ops_util.h)
    constexpr int K = 4;
    float mean[K], sd[K];
    for (int64_t r0 = 0; r0 < rows; r0 += K) {
      const int k_n = static_cast<int>(std::min<int64_t>(K, rows - r0));
      if (k_n == K) small_sums<K>(x + r0 * N, N, mean, sd, epsf);
      else
        for (int k = 0; k < k_n; k++) small_sums<1>(x + (r0 + k) * N, N, mean + k, sd + k, epsf);
      for (int k = 0; k < k_n; k++) {
        const float* xr = x + (r0 + k) * N;
        float* yr = y + (r0 + k) * N;
        int64_t j = 0;
#if defined(__x86_64__)
        if (avx2) j = small_out_avx2(xr, N, mean[k], sd[k], w, b, yr);
#endif
        for (; j < N; j++) {
          const float t = (xr[j] - mean[k]) / sd[k];
          yr[j] = t * (w ? w[j] : 1.f) + (b ? b[j] : 0.f);
        }
        if (mean_out) mean_out[r0 + k] = mean[k];
        if (rstd_out) rstd_out[r0 + k] = static_cast<float>(1.0 / static_cast<double>(sd[k]));
      }
    }
    return;
  }
  for (int64_t r = 0; r < rows; r++) {
    const float* xr = x + r * N;
    float* yr = y + r * N;
    float mean, var;
    row_moments(xr, N, avx2, mean, var);
    const float rstd = 1.f / std::sqrt(var + epsf);
    const float scale = rstd, offset = -rstd * mean;
    int64_t i = 0;
#if defined(__x86_64__)
    if (avx2) i = affine_avx2(xr, N, scale, offset, w, b, yr);
#endif
    for (; i < N; i++) {
      const float t = xr[i] * scale + offset;
      yr[i] = t * (w ? w[i] : 1.f) + (b ? b[i] : 0.f);
    }
    if (mean_out) mean_out[r] = mean;
    if (rstd_out) rstd_out[r] = rstd;
  }
}

}  // namespace etnp
