#include "kernels/compute/qgemm_qb4.h"

#include <algorithm>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/gemm_tasks.h"
#include "os/cpu_id.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

constexpr int64_t NR = 16;

// The zero-point offset of uint8 codes (q + 128): 128 + zp, wrapping int32 arithmetic (qgemm.cpp's)
inline int32_t code_offset(int32_t zp) { return (int32_t)((uint32_t)zp + 128u); }

// The call's activations: per row, nb blocks of w.chunks * 8 codes (zeros past each block's K),
// and per row and block the integer terms that turn the vector paths' sums into qgemm_q8's:
// with nibbles n = w + 8 (padding: 8) and codes u (padding: 0), a block's
//   acc - (128 + za) * colsum = sum u n - off * sum n + (off * 8 * Kpad - 8 * sum u)
// (off = 128 + za, Kpad = 8 * chunks of the block; wrapping int32 arithmetic, exact anyway):
// corr[m * nb + b] is the last term.
struct Acts {
  const uint8_t* u = nullptr;
  int64_t ldu = 0;
  const int32_t* corr = nullptr;
  const int32_t* off = nullptr;
  const float* offf = nullptr;  // off as float
  const float* sa = nullptr;
  // every off in [0, 255] (qd8 zero points in [-128, 127]) and blocks of at most 1024: the sums,
  // the corrections and off * nsum are integers below 2^24 in magnitude (1024 * 255 * 15, 2 * 8 *
  // 255 * 1024), exact in float32 - the VNNI tile subtracts off * nsum there, by one FMA
  bool float_exact = false;
};

inline float scale_at(const PackedQB4& w, const uint8_t* s, int64_t j) {
  if (w.f32_scales) {
    float f;
    std::memcpy(&f, s + j * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, s + j * 2, 2);
  const uint32_t u = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Portable: rows [m0, m1) x panels [p0, p1), the int8 sums as qgemm_q8's (acc of u * w, then
// the zero-point term with the column sum) and its scalar epilogue (rows_generic / finish): per
// block (float)q * (sa * sw) + bias (block 0's) + the blocks before, clamped after the last (the
// clamps in between, to +-infinity, change nothing - a NaN included).
void rows_generic(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const Acts& a, const PackedQB4& w,
                  const float* bias, float lo, float hi, float* C, int64_t ldc) {
  for (int64_t m = m0; m < m1; m++) {
    const int32_t off = a.off[m];
    for (int64_t p = p0; p < p1; p++) {
      float F[NR];
      const uint8_t* d = w.data.data() + p * w.panel_bytes;
      for (int64_t b = 0; b < w.nb; b++, d += w.block_bytes) {
        const int64_t ch = w.block_chunks(b);
        const uint8_t* x = a.u + m * a.ldu + b * w.chunks * 8;
        int32_t acc[NR] = {}, cs[NR] = {};
        for (int64_t c = 0; c < ch; c++)
          for (int64_t j = 0; j < NR; j++)
            for (int t = 0; t < 4; t++) {
              const uint8_t byte = d[c * 64 + j * 4 + t];
              const int32_t wl = (int32_t)(byte & 15) - 8, wh = (int32_t)(byte >> 4) - 8;
              acc[j] += (int32_t)x[c * 8 + t] * wl + (int32_t)x[c * 8 + 4 + t] * wh;
              cs[j] += wl + wh;
            }
        const uint8_t* s = d + ch * 64;
        for (int64_t j = 0; j < NR; j++) {
          const int64_t n = p * NR + j;
          if (n >= w.N) break;
          const int32_t q = (int32_t)((uint32_t)acc[j] - (uint32_t)off * (uint32_t)cs[j]);
          const float sw = scale_at(w, s, j), sa = a.sa[m];
          float v = (float)q * (sa * sw) + (b == 0 && bias ? bias[n] : 0.f);
          if (b > 0) v += F[j];
          F[j] = v;
        }
      }
      for (int64_t j = 0, n = p * NR; j < NR && n < w.N; j++, n++) C[m * ldc + n] = std::min(std::max(F[j], lo), hi);
    }
  }
}

#if defined(__x86_64__)
bool cpu_has_vnni() {
  static const bool v = cpu_has_avx512f() && os::cpu_id().avx512vnni;
  return v;
}

// A block's 16 column scales (bfloat16 or float32) at s
ETNP_TARGET_INLINE("avx512f,avx512bw") __m512 scales16(const PackedQB4& w, const uint8_t* s) {
  if (w.f32_scales) return _mm512_loadu_ps(s);
  const __m512i h = _mm512_maskz_cvtepu16_epi32((__mmask16)0xFFFF, _mm256_loadu_si256((const __m256i*)s));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32((__mmask16)0xFFFF, h, 16));
}

// ROWS rows x NV panels (AVX-512 VNNI): per 64-byte chunk and panel, its low and high nibbles
// (8 k of 16 columns) times broadcast codes (vpdpbusd: u8 codes x the nibbles 0..15), and the
// nibbles' column sums (vpdpbusd of ones), the accumulators started at the rows' corrections;
// per block qgemm_q8's integer sum, made exactly in float (Acts::float_exact), and its
// VNNI epilogue's float operations (fmadd(f, sa * sw, bias or 0), + the blocks before) into
// float accumulators; the clamp and store once.
template <int ROWS, int NV>
ETNP_TARGET("avx512f,avx512bw,avx512vnni") void tile_vnni(int64_t m0, int64_t p0, const Acts& a, const PackedQB4& w,
                                                         const float* bias, float lo, float hi, float* C,
                                                         int64_t ldc) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), ones = _mm512_set1_epi8(1);
  __m512 F[NV][ROWS];
  __mmask16 mask[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; v++)
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++) F[v][i] = _mm512_setzero_ps();
  const uint8_t* d[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; v++) {
    const int64_t cols = std::min<int64_t>(NR, w.N - (p0 + v) * NR);
    mask[v] = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
    d[v] = w.data.data() + (p0 + v) * w.panel_bytes;
  }
  for (int64_t b = 0; b < w.nb; b++) {
    const int64_t ch = w.block_chunks(b);
    __m512i acc[NV][ROWS], ns[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
      ns[v] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int i = 0; i < ROWS; i++) acc[v][i] = _mm512_set1_epi32(a.corr[(m0 + i) * w.nb + b]);
    }
    // (one row: the high nibbles' products in accumulators of their own, two dependency chains)
    constexpr int SPLIT = ROWS == 1 ? NV : 1;
    __m512i acc2[SPLIT];
#pragma GCC unroll 4
    for (int v = 0; v < SPLIT; v++) acc2[v] = _mm512_setzero_si512();
    const uint8_t* x = a.u + m0 * a.ldu + b * w.chunks * 8;
    for (int64_t c = 0; c < ch; c++) {
      __m512i l[NV], h[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++) {
        const __m512i raw = _mm512_loadu_si512(d[v] + c * 64);
        l[v] = _mm512_and_si512(raw, m4);
        h[v] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
        ns[v] = _mm512_dpbusd_epi32(ns[v], ones, _mm512_add_epi8(l[v], h[v]));
      }
#pragma GCC unroll 8
      for (int i = 0; i < ROWS; i++) {
        int32_t x0, x1;
        std::memcpy(&x0, x + i * a.ldu + c * 8, 4);
        std::memcpy(&x1, x + i * a.ldu + c * 8 + 4, 4);
        const __m512i xl = _mm512_set1_epi32(x0), xh = _mm512_set1_epi32(x1);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
          if (ROWS == 1) {
            acc[v][i] = _mm512_dpbusd_epi32(acc[v][i], xl, l[v]);
            acc2[v % SPLIT] = _mm512_dpbusd_epi32(acc2[v % SPLIT], xh, h[v]);
          } else {
            acc[v][i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc[v][i], xl, l[v]), xh, h[v]);
          }
        }
      }
    }
    if (ROWS == 1)
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++) acc[v][0] = _mm512_add_epi32(acc[v][0], acc2[v % SPLIT]);
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
      const __m512 sw = scales16(w, d[v] + ch * 64);
      const __m512 bv = b == 0 && bias ? _mm512_maskz_loadu_ps(mask[v], bias + (p0 + v) * NR) : _mm512_setzero_ps();
      const __m512 nsf = _mm512_cvtepi32_ps(ns[v]);
#pragma GCC unroll 8
      for (int i = 0; i < ROWS; i++) {
        // (float)q: (acc + corr) - off * nsum in float, exact (integers below 2^24: Acts::float_exact)
        const __m512 f = _mm512_fnmadd_ps(_mm512_set1_ps(a.offf[m0 + i]), nsf, _mm512_cvtepi32_ps(acc[v][i]));
        const __m512 r = _mm512_fmadd_ps(f, _mm512_mul_ps(_mm512_set1_ps(a.sa[m0 + i]), sw), bv);
        F[v][i] = b == 0 ? r : _mm512_add_ps(r, F[v][i]);
      }
      d[v] += w.block_bytes;
    }
  }
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
#pragma GCC unroll 4
  for (int v = 0; v < NV; v++)
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++)
      _mm512_mask_storeu_ps(C + (m0 + i) * ldc + (p0 + v) * NR, mask[v],
                            _mm512_min_ps(vhi, _mm512_max_ps(vlo, F[v][i])));
}

// ROWS rows x 8 columns (half `hf` of panel p) on AVX2: vpmaddubsw of codes x nibbles (pairs of
// products, at most 2 * 255 * 15 each: no saturation), low and high nibbles' added, vpmaddwd by
// ones to int32; the same int32 terms and float operations as the VNNI tile (qgemm_q8's AVX2
// epilogue: fmadd(f, sa * sw, bias or 0), + the blocks before).
template <int ROWS>
ETNP_TARGET("avx2,fma") void tile_avx2(int64_t m0, int64_t p, int hf, const Acts& a, const PackedQB4& w,
                                       const float* bias, float lo, float hi, float* C, int64_t ldc) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  const int64_t n0 = p * NR + hf * 8, cols = std::min<int64_t>(8, w.N - n0);
  __m256 F[ROWS];
#pragma GCC unroll 4
  for (int i = 0; i < ROWS; i++) F[i] = _mm256_setzero_ps();
  const uint8_t* d = w.data.data() + p * w.panel_bytes;
  for (int64_t b = 0; b < w.nb; b++, d += w.block_bytes) {
    const int64_t ch = w.block_chunks(b);
    __m256i acc[ROWS], ns16 = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++) acc[i] = _mm256_setzero_si256();
    const uint8_t* x = a.u + m0 * a.ldu + b * w.chunks * 8;
    for (int64_t c = 0; c < ch; c++) {
      const __m256i raw = _mm256_loadu_si256((const __m256i*)(d + c * 64 + hf * 32));
      const __m256i l = _mm256_and_si256(raw, m4), h = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
      ns16 = _mm256_add_epi16(ns16, _mm256_maddubs_epi16(ones8, _mm256_add_epi8(l, h)));
#pragma GCC unroll 4
      for (int i = 0; i < ROWS; i++) {
        int32_t x0, x1;
        std::memcpy(&x0, x + i * a.ldu + c * 8, 4);
        std::memcpy(&x1, x + i * a.ldu + c * 8 + 4, 4);
        const __m256i pr = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_set1_epi32(x0), l),
                                            _mm256_maddubs_epi16(_mm256_set1_epi32(x1), h));
        acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(pr, ones16));
      }
    }
    const __m256i ns = _mm256_madd_epi16(ns16, ones16);
    const uint8_t* s = d + ch * 64;
    __m256 sw;
    if (w.f32_scales) {
      sw = _mm256_loadu_ps((const float*)s + hf * 8);
    } else {
      const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)(s + hf * 16)));
      sw = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
    }
    __m256 bv = _mm256_setzero_ps();
    if (b == 0 && bias) {
      alignas(32) float t[8] = {};
      std::memcpy(t, bias + n0, (size_t)cols * sizeof(float));
      bv = _mm256_load_ps(t);
    }
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++) {
      __m256i q = _mm256_sub_epi32(acc[i], _mm256_mullo_epi32(_mm256_set1_epi32(a.off[m0 + i]), ns));
      q = _mm256_add_epi32(q, _mm256_set1_epi32(a.corr[(m0 + i) * w.nb + b]));
      const __m256 r = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), _mm256_mul_ps(_mm256_set1_ps(a.sa[m0 + i]), sw), bv);
      F[i] = b == 0 ? r : _mm256_add_ps(r, F[i]);
    }
  }
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
#pragma GCC unroll 4
  for (int i = 0; i < ROWS; i++) {
    const __m256 r = _mm256_min_ps(vhi, _mm256_max_ps(vlo, F[i]));
    float* c = C + (m0 + i) * ldc + n0;
    if (cols >= 8) {
      _mm256_storeu_ps(c, r);
    } else {
      alignas(32) float t[8];
      _mm256_store_ps(t, r);
      std::memcpy(c, t, (size_t)cols * sizeof(float));
    }
  }
}

using TileV = void (*)(int64_t, int64_t, const Acts&, const PackedQB4&, const float*, float, float, float*, int64_t);
const TileV kVnni1[8] = {&tile_vnni<1, 1>, &tile_vnni<2, 1>, &tile_vnni<3, 1>, &tile_vnni<4, 1>,
                         &tile_vnni<5, 1>, &tile_vnni<6, 1>, &tile_vnni<7, 1>, &tile_vnni<8, 1>};
const TileV kVnni4[2] = {&tile_vnni<1, 4>, &tile_vnni<2, 4>};
using TileA = void (*)(int64_t, int64_t, int, const Acts&, const PackedQB4&, const float*, float, float, float*,
                       int64_t);
const TileA kAvx2[4] = {&tile_avx2<1>, &tile_avx2<2>, &tile_avx2<3>, &tile_avx2<4>};
#endif

enum class Path { Generic, Avx2, Vnni };
Path path() {
#if defined(__x86_64__)
  if (cpu_has_vnni()) return Path::Vnni;
  if (cpu_has_avx2_fma()) return Path::Avx2;
#endif
  return Path::Generic;
}

}  // namespace

void qgemm_qb4(ThreadPool* pool, int64_t M, const uint8_t* x, int64_t ldx, const float* sa, const int32_t* za,
               const PackedQB4& w, const float* bias, float lo, float hi, float* C, int64_t ldc) {
  if (M <= 0 || w.N <= 0) return;
  // the activations, padded per block, and their per-row terms (on the calling thread: M * K bytes)
  thread_local std::vector<uint8_t> ubuf;
  thread_local std::vector<int32_t> cbuf, obuf;
  thread_local std::vector<float> fbuf;
  const int64_t ldu = w.nb * w.chunks * 8;
  ubuf.assign((size_t)(M * ldu), 0);
  cbuf.resize((size_t)(M * w.nb));
  obuf.resize((size_t)M);
  fbuf.resize((size_t)M);
  bool float_exact = w.bs <= 1024;
  for (int64_t m = 0; m < M; m++) {
    const int32_t off = code_offset(za[m]);
    obuf[(size_t)m] = off;
    fbuf[(size_t)m] = (float)off;
    float_exact = float_exact && off >= 0 && off <= 255;
    for (int64_t b = 0; b < w.nb; b++) {
      const int64_t k0 = b * w.bs, kb = std::min(w.bs, w.K - k0);
      const uint8_t* src = x + m * ldx + k0;
      uint8_t* dst = ubuf.data() + m * ldu + b * w.chunks * 8;
      std::memcpy(dst, src, (size_t)kb);
      uint32_t sum = 0;
      for (int64_t k = 0; k < kb; k++) sum += src[k];
      cbuf[(size_t)(m * w.nb + b)] = (int32_t)((uint32_t)off * (uint32_t)(64 * w.block_chunks(b)) - 8u * sum);
    }
  }
  Acts a;
  a.u = ubuf.data();
  a.ldu = ldu;
  a.corr = cbuf.data();
  a.off = obuf.data();
  a.offf = fbuf.data();
  a.sa = sa;
  a.float_exact = float_exact;
  static const Path kind = path();
  ThreadPool* tp = gemm_pool(pool, M, w.N, w.K);
  const int64_t MB = kind == Path::Avx2 ? 4 : 8, rb = (M + MB - 1) / MB, panels = w.panels;
  // a task: row blocks whose activations fit ~256 KB (every row, mostly) x a range of panels
  const int64_t rows = std::max<int64_t>(1, std::min(rb, (int64_t)(256 << 10) / (MB * ldu)));
  const int64_t row_tasks = (rb + rows - 1) / rows;
  const GemmTasks grid = gemm_tasks(row_tasks, panels, tp);
  const int64_t split = grid.split, per = grid.per;
  auto tasks = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const int64_t m0 = (t / split) * rows * MB, m1 = std::min(M, m0 + rows * MB);
      const int64_t p0 = (t % split) * per, p1 = std::min(panels, p0 + per);
#if defined(__x86_64__)
      if (kind == Path::Vnni && a.float_exact) {
        // panel by panel, all the task's rows (a panel's weights stay in L1 across them)
        int64_t p = p0;
        if (m1 - m0 <= 2)
          for (; p + 4 <= p1; p += 4) kVnni4[m1 - m0 - 1](m0, p, a, w, bias, lo, hi, C, ldc);
        for (; p < p1; p++)
          for (int64_t m = m0; m < m1; m += MB) kVnni1[std::min(MB, m1 - m) - 1](m, p, a, w, bias, lo, hi, C, ldc);
        continue;
      }
      if (kind != Path::Generic) {  // (also VNNI's where the float shortcut is not exact: the same float operations)
        for (int64_t p = p0; p < p1; p++)
          for (int hf = 0; hf < 2 && p * NR + hf * 8 < w.N; hf++)
            for (int64_t m = m0; m < m1; m += 4) kAvx2[std::min<int64_t>(4, m1 - m) - 1](m, p, hf, a, w, bias, lo, hi, C, ldc);
        continue;
      }
#endif
      rows_generic(m0, m1, p0, p1, a, w, bias, lo, hi, C, ldc);
    }
  };
  if (tp) tp->parallel_for(row_tasks * split, 1, tasks);
  else tasks(0, row_tasks * split);
}

}  // namespace etnp
