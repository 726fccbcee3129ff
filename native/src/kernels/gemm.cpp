#include "kernels/gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

constexpr int MR = 6, NR = 16;

// acc[MR][NR] = sum_k a[k*MR + i] * b[k*NR + j]
void micro_generic(int64_t K, const float* a, const float* b, float* acc) {
  float c[MR][NR] = {};
  for (int64_t k = 0; k < K; k++) {
    const float* bk = b + k * NR;
    for (int i = 0; i < MR; i++) {
      float av = a[k * MR + i];
      for (int j = 0; j < NR; j++) c[i][j] += av * bk[j];
    }
  }
  std::memcpy(acc, c, sizeof(c));
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void micro_avx2(int64_t K, const float* a, const float* b, float* acc) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t k = 0; k < K; k++) {
    __m256 b0 = _mm256_loadu_ps(b + k * NR), b1 = _mm256_loadu_ps(b + k * NR + 8);
    const float* ak = a + k * MR;
    __m256 x = _mm256_broadcast_ss(ak + 0);
    c00 = _mm256_fmadd_ps(x, b0, c00); c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(ak + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10); c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(ak + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20); c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(ak + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30); c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(ak + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40); c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(ak + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50); c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  _mm256_storeu_ps(acc + 0, c00); _mm256_storeu_ps(acc + 8, c01);
  _mm256_storeu_ps(acc + 16, c10); _mm256_storeu_ps(acc + 24, c11);
  _mm256_storeu_ps(acc + 32, c20); _mm256_storeu_ps(acc + 40, c21);
  _mm256_storeu_ps(acc + 48, c30); _mm256_storeu_ps(acc + 56, c31);
  _mm256_storeu_ps(acc + 64, c40); _mm256_storeu_ps(acc + 72, c41);
  _mm256_storeu_ps(acc + 80, c50); _mm256_storeu_ps(acc + 88, c51);
}
#endif

using Micro = void (*)(int64_t, const float*, const float*, float*);

Micro pick_micro() {
#if defined(__x86_64__)
  if (cpu_has_avx2_fma()) return &micro_avx2;
#endif
  return &micro_generic;
}

}  // namespace

void sgemm(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa,
           const float* B, int64_t rsb, int64_t csb, float* C, int64_t ldc, const GemmEpilogue& ep) {
  if (M <= 0 || N <= 0) return;
  static const Micro micro = pick_micro();
  int64_t mb = (M + MR - 1) / MR, nb = (N + NR - 1) / NR;
  // Pack A into MR-row panels (k-major) and B into NR-column panels (k-major), zero padded.
  std::vector<float> pa((size_t)(mb * MR * K)), pb((size_t)(nb * NR * K));
  auto pack_a = [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; p++) {
      float* dst = pa.data() + p * MR * K;
      for (int64_t k = 0; k < K; k++)
        for (int i = 0; i < MR; i++) {
          int64_t m = p * MR + i;
          dst[k * MR + i] = m < M ? A[m * rsa + k * csa] : 0.f;
        }
    }
  };
  auto pack_b = [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; p++) {
      float* dst = pb.data() + p * NR * K;
      int64_t n0 = p * NR, nn = std::min<int64_t>(NR, N - n0);
      for (int64_t k = 0; k < K; k++) {
        const float* src = B + k * rsb + n0 * csb;
        float* d = dst + k * NR;
        if (csb == 1) {
          std::memcpy(d, src, nn * sizeof(float));
        } else {
          for (int64_t j = 0; j < nn; j++) d[j] = src[j * csb];
        }
        for (int64_t j = nn; j < NR; j++) d[j] = 0.f;
      }
    }
  };
  int64_t work = M * N * K;
  ThreadPool* tp = work > (1 << 16) ? pool : nullptr;
  if (tp) {
    tp->parallel_for(mb, 1, pack_a);
    tp->parallel_for(nb, 1, pack_b);
  } else {
    pack_a(0, mb);
    pack_b(0, nb);
  }
  auto tiles = [&](int64_t b, int64_t e) {
    alignas(32) float acc[MR * NR];
    for (int64_t t = b; t < e; t++) {
      int64_t pm = t / nb, pn = t % nb;
      micro(K, pa.data() + pm * MR * K, pb.data() + pn * NR * K, acc);
      int64_t m0 = pm * MR, n0 = pn * NR;
      int64_t mm = std::min<int64_t>(MR, M - m0), nn = std::min<int64_t>(NR, N - n0);
      for (int64_t i = 0; i < mm; i++) {
        float* c = C + (m0 + i) * ldc + n0;
        const float* r = acc + i * NR;
        float br = ep.bias_row ? ep.bias_row[m0 + i] : 0.f;
        for (int64_t j = 0; j < nn; j++) {
          float v = r[j] + br;
          if (ep.bias_col) v += ep.bias_col[n0 + j];
          if (ep.accumulate) v += c[j];
          c[j] = std::min(std::max(v, ep.min), ep.max);
        }
      }
    }
  };
  if (tp) tp->parallel_for(mb * nb, 1, tiles);
  else tiles(0, mb * nb);
}

}  // namespace etnp
