// sgemv_rowmajor (gemv_f32.h): groups of up to 128 columns, 8 accumulators of 16 lanes over k.
#include "kernels/compute/gemv_f32.h"

#include <algorithm>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/gemm_tasks.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {

#if defined(__x86_64__)
namespace {
constexpr int64_t kGroup = 128;  // columns a task's accumulators hold

inline __mmask16 lane_mask(int64_t cols) {
  return cols >= 16 ? (__mmask16)0xFFFF : cols <= 0 ? (__mmask16)0 : (__mmask16)((1u << cols) - 1);
}

// columns [n0, n0 + cols), cols <= 16 * NV; the epilogue as tile_avx512's (gemm.cpp)
template <int NV>
ETNP_TARGET("avx512f")
void group_avx512(int64_t K, const float* A, const float* B, int64_t rsb, float* C, int64_t n0, int64_t cols,
                  const GemmEpilogue& ep) {
  __mmask16 m[NV];
  __m512 acc[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; v++) {
    m[v] = lane_mask(cols - 16 * v);
    acc[v] = _mm512_setzero_ps();
  }
  const float* b = B + n0;
  for (int64_t k = 0; k < K; k++, b += rsb) {
    const __m512 x = _mm512_set1_ps(A[k]);
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) acc[v] = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m[v], b + 16 * v), acc[v]);
  }
  const __m512 vlo = _mm512_set1_ps(ep.min), vhi = _mm512_set1_ps(ep.max);
#pragma GCC unroll 8
  for (int v = 0; v < NV; v++) {
    float* c = C + n0 + 16 * v;
    __m512 r = _mm512_add_ps(acc[v], ep.bias_col ? _mm512_maskz_loadu_ps(m[v], ep.bias_col + n0 + 16 * v)
                                                 : _mm512_setzero_ps());
    if (ep.bias_row) r = _mm512_add_ps(r, _mm512_set1_ps(ep.bias_row[0]));
    if (ep.accumulate) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m[v], c));
    _mm512_mask_storeu_ps(c, m[v], _mm512_min_ps(vhi, _mm512_max_ps(vlo, r)));  // NaN stays NaN
  }
}

using Group = void (*)(int64_t, const float*, const float*, int64_t, float*, int64_t, int64_t, const GemmEpilogue&);
const Group kGroups[8] = {&group_avx512<1>, &group_avx512<2>, &group_avx512<3>, &group_avx512<4>,
                          &group_avx512<5>, &group_avx512<6>, &group_avx512<7>, &group_avx512<8>};
}  // namespace
#endif

bool sgemv_rowmajor(ThreadPool* pool, int64_t N, int64_t K, const float* A, const float* B, int64_t rsb, float* C,
                    const GemmEpilogue& ep) {
#if defined(__x86_64__)
  static const bool avx512 = cpu_has_avx512f();
  if (!avx512 || ep.residual || N <= 0 || K < 0) return false;
  const int64_t groups = (N + kGroup - 1) / kGroup;
  auto run = [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; g++) {
      const int64_t n0 = g * kGroup, cols = std::min(kGroup, N - n0);
      kGroups[(cols + 15) / 16 - 1](K, A, B, rsb, C, n0, cols, ep);
    }
  };
  ThreadPool* tp = gemm_pool(pool, 1, N, K);
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, kGroup * K));
  if (tp && groups > grain) tp->parallel_for(groups, grain, run);
  else run(0, groups);
  return true;
#else
  (void)pool, (void)N, (void)K, (void)A, (void)B, (void)rsb, (void)C, (void)ep;
  return false;
#endif
}

}  // namespace etnp
