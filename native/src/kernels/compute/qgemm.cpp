#include "kernels/compute/qgemm.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/gemm_tasks.h"
#include "kernels/compute/qgemm_generic.h"
#include "kernels/compute/qgemm_neon.h"
#include "os/cpu_id.h"
#include "util/compiler.h"
#include "util/fma_exact.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

constexpr int64_t NR = kQ8PanelCols;

void snap_block(float* C, int64_t ldc, int64_t m0, int64_t m1, int64_t n0, int64_t n1, const Int8Grid& g) {
  for (int64_t m = m0; m < m1; m++) snap_to_grid(g, C + m * ldc + n0, n1 - n0);
}

// Rows [m0, m1) x panels [p0, p1) on weights in groups of 4; C points at row m0, column p0 * NR.
// (on aarch64 with NEON, each panel's inner loop is q8_row_panel_neon)
void rows_groups4(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                  const float* bias, float lo, float hi, float* C, int64_t ldc, bool accumulate) {
  const int64_t G = w.Kp / 4;
#if defined(__aarch64__)
  static const bool neon = cpu_has_neon();
#endif
  for (int64_t m = m0; m < m1; m++) {
    const uint8_t* x = a.data + m * w.Kp;
    const int32_t offset = q8_code_offset(a.zero_point[m]);
    for (int64_t p = p0; p < p1; p++) {
      int32_t acc[NR] = {};
      const int8_t* b = w.data.data() + p * G * NR * 4;
#if defined(__aarch64__)
      if (neon) q8_row_panel_neon(G, x, b, acc);
      else
#endif
      for (int64_t g = 0; g < G; g++, b += NR * 4)
        for (int64_t j = 0; j < NR; j++)
          for (int t = 0; t < 4; t++) acc[j] += (int32_t)x[g * 4 + t] * (int32_t)b[j * 4 + t];
      for (int64_t j = 0, n = p * NR; j < NR && n < w.N; j++, n++) {
        float& c = C[(m - m0) * ldc + n - p0 * NR];
        c = q8_finish(acc[j], offset, w.col_sum[n], a.scale[m], w.scale[n], bias ? bias[n] : 0.f, lo, hi,
                      accumulate ? &c : nullptr, a.scale_rows_first);
      }
    }
  }
}

#if defined(__x86_64__)
// Where a VNNI tile reads its rows' activations: rows of Kp bytes from a.data (rows == null), or
// (indirect) `taps` runs of K / taps bytes per row, row m's run t at rows[m * taps + t] + offset.
struct Rows {
  const uint8_t* const* rows = nullptr;
  int64_t taps = 1, offset = 0;
};

// The accumulators' start for panel columns n0..n0 + 15: with uniform rows (U: QActivations::
// uniform, one zero point) the zero-point correction -(128 + zp) * col_sum, so that the epilogue
// has nothing to subtract (wrapping int32 arithmetic, the same sums); else 0.
template <bool U>
ETNP_TARGET_INLINE("avx512f,avx512vnni") __m512i acc_start(int64_t m0, int64_t n0, const QActivations& a,
                                                         const PackedQ8& w) {
  if (!U) return _mm512_setzero_si512();
  const __m512i cs = _mm512_loadu_si512(w.col_sum.data() + n0);  // (zero-padded to whole panels)
  return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_mullo_epi32(_mm512_set1_epi32(q8_code_offset(a.zero_point[m0])), cs));
}

// The epilogue of one panel's ROWS accumulator rows (rows m0.., columns n0..n0 + 15, those below
// w.N), started at acc_start<U>: the zero-point correction (per row unless U), the scales, bias
// and clamp, stored as `out` asks (q8_output.h).
template <int ROWS, bool U>
ETNP_TARGET_INLINE("avx512f,avx512vnni") void finish_panel(const __m512i* acc, int64_t m0, int64_t n0,
                                                         const QActivations& a, const PackedQ8& w, const float* bias,
                                                         float lo, float hi, const QOutput& out) {
  const Q8Bounds16 bounds = q8_bounds16(out, lo, hi);
  const int64_t cols = std::min<int64_t>(NR, w.N - n0);
  const __mmask16 m = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
  const __m512 sw = _mm512_maskz_loadu_ps(m, w.scale.data() + n0);
  const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + n0) : _mm512_setzero_ps();
  const __m512 s0 = U ? _mm512_mul_ps(_mm512_set1_ps(a.scale[m0]), sw) : _mm512_setzero_ps();
  const __m512i cs = U ? _mm512_setzero_si512() : _mm512_maskz_loadu_epi32(m, w.col_sum.data() + n0);
  const bool rows_first = !U && a.scale_rows_first;
#pragma GCC unroll 8
  for (int i = 0; i < ROWS; i++) {
    __m512i q = acc[i];
    __m512 r;
    if (U) {
      r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), s0, bv);
    } else {
      q = _mm512_sub_epi32(q, _mm512_mullo_epi32(_mm512_set1_epi32(q8_code_offset(a.zero_point[m0 + i])), cs));
      const __m512 sa = _mm512_set1_ps(a.scale[m0 + i]), f = _mm512_cvtepi32_ps(q);
      r = rows_first ? _mm512_fmadd_ps(_mm512_mul_ps(f, sa), sw, bv) : _mm512_fmadd_ps(f, _mm512_mul_ps(sa, sw), bv);
    }
    if (out.accumulate) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, out.C + (m0 + i) * out.ldc + n0));
    store_q8_16(out, (m0 + i) * out.ldc + n0, cols, m, r, bounds);
  }
}

// ROWS rows x NV panels: ROWS * NV int32 accumulators, one vpdpbusd each per group of 4 k.
template <int ROWS, int NV, bool U>
ETNP_TARGET("avx512f,avx512vnni") void tile_vnni(int64_t m0, int64_t p0, const QActivations& a,
                                                             const PackedQ8& w, const float* bias, float lo, float hi,
                                                             const QOutput& out, const Rows& src) {
  const int64_t G = w.Kp / 4, TG = G / src.taps;  // groups of 4 k: in all, a run
  __m512i acc[NV][ROWS];
#pragma GCC unroll 2
  for (int v = 0; v < NV; v++) {
    const __m512i start = acc_start<U>(m0, (p0 + v) * NR, a, w);
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++) acc[v][i] = start;
  }
  const int8_t* b0 = w.data.data() + p0 * G * NR * 4;
  for (int64_t t = 0, g = 0; t < src.taps; t++) {
    const uint8_t* x[ROWS];
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++)
      x[i] = src.rows ? src.rows[(m0 + i) * src.taps + t] + src.offset : a.data + (m0 + i) * w.Kp;
    for (int64_t k = 0; k < TG; k++, g++) {
      __m512i b[NV];
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) b[v] = _mm512_loadu_si512(b0 + (v * G + g) * NR * 4);
#pragma GCC unroll 8
      for (int i = 0; i < ROWS; i++) {
        int32_t four;
        std::memcpy(&four, x[i] + k * 4, 4);
        const __m512i xa = _mm512_set1_epi32(four);
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) acc[v][i] = _mm512_dpbusd_epi32(acc[v][i], xa, b[v]);
      }
    }
  }
#pragma GCC unroll 2
  for (int v = 0; v < NV; v++) finish_panel<ROWS, U>(acc[v], m0, (p0 + v) * NR, a, w, bias, lo, hi, out);
}

// A grouped convolution's small groups side by side (qgemm_q8_grouped): panel p's 16 columns are
// P = 16 / OCg whole groups, g0 = p * P first, lane j of group g0 + j / OCg. Per output pixel and
// tap one masked load takes the P groups' channels (P * ICg <= 64 bytes, from channel g0 * ICg);
// for each of a tap's S = ICg / 4 groups of 4 channels a vpermd hands lane j its own group's 4
// (dword (j / OCg) * S + s; lanes[j] = (j / OCg) * S), then one vpdpbusd adds them for all 16
// columns - the weights are the ordinary packing of every column's own filter.
template <int ROWS, bool U>
ETNP_TARGET("avx512f,avx512vnni") void tile_vnni_grouped(int64_t m0, int64_t p, const QActivations& a,
                                                                     const PackedQ8& w, const float* bias, float lo,
                                                                     float hi, const QOutput& out, const Rows& src,
                                                                     int64_t ICg, int64_t OCg, const int32_t* lanes) {
  const int64_t G = w.Kp / 4, S = ICg / 4, P = NR / OCg, g0 = p * P;
  const int64_t groups = std::min<int64_t>(P, (w.N - p * NR) / OCg);  // (whole groups: OCg divides N)
  const __mmask16 in_mask = (__mmask16)((1u << (groups * S)) - 1);
  const __m512i idx0 = _mm512_loadu_si512(lanes), one = _mm512_set1_epi32(1);
  __m512i acc[ROWS];
  const __m512i start = acc_start<U>(m0, p * NR, a, w);
#pragma GCC unroll 8
  for (int i = 0; i < ROWS; i++) acc[i] = start;
  const int8_t* b = w.data.data() + p * G * NR * 4;
  const int64_t off = src.offset + g0 * ICg;
  for (int64_t t = 0; t < src.taps; t++) {
    __m512i x[ROWS];
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++) x[i] = _mm512_maskz_loadu_epi32(in_mask, src.rows[(m0 + i) * src.taps + t] + off);
    __m512i idx = idx0;  // dword s of each lane's group
    for (int64_t s = 0; s < S; s++, b += NR * 4, idx = _mm512_add_epi32(idx, one)) {
      const __m512i bw = _mm512_loadu_si512(b);
#pragma GCC unroll 8
      for (int i = 0; i < ROWS; i++) acc[i] = _mm512_dpbusd_epi32(acc[i], _mm512_permutexvar_epi32(idx, x[i]), bw);
    }
  }
  finish_panel<ROWS, U>(acc, m0, p * NR, a, w, bias, lo, hi, out);
}

// AVX2: int8 -> int16 and vpmaddwd (exact, no saturation). The weights are packed in k pairs
// (PackedQ8::pairs): 32 bytes a pair of k for the 16 columns of a panel, (column, k) lanes, so
// 16 of them widened to int16 are 8 columns x 2 k and one vpmaddwd with a broadcast pair of
// activations (x: widened to int16 once per task) adds 2 k to 8 column sums in place - the
// accumulators hold columns, the epilogue needs no horizontal reduction. A tile is ROWS (<= 4)
// rows x NV (1 or 2) groups of 8 columns: 8 accumulators, 2 weights and a broadcast in 16
// registers (six rows spill: GCC hoists the broadcasts ahead of the multiplies).
// Uniform rows (one activation scale and zero point, as static int8 has): `uni` holds per column
// the zero-point correction (128 + zp) * col_sum (int32) and the scale product a.scale * w.scale,
// computed once per call instead of once per row and tile.
struct UniformRows {
  const int32_t* corr;
  const float* scale;
};
template <int ROWS, int NV, bool U>
ETNP_TARGET("avx2,fma") void tile_avx2(int64_t m0, int64_t p0, const int16_t* x, const QActivations& a,
                                                   const PackedQ8& w, const float* bias, const float* lohi,
                                                   const QOutput& out, const UniformRows& uni) {
  const int64_t J = w.Kp / 2, Kp = w.Kp, n0 = p0 * NR;
  // (uniform rows: the accumulators start at minus the zero-point correction, nothing to subtract after)
  __m256i start[NV];
#pragma GCC unroll 2
  for (int v = 0; v < NV; v++)
    start[v] = U ? _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i*)(uni.corr + n0 + 8 * v)))
                 : _mm256_setzero_si256();
  __m256i acc[ROWS][NV];
#pragma GCC unroll 4
  for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[i][v] = start[v];
  const int8_t* b = w.data.data() + p0 * J * NR * 2;
  for (int64_t j = 0; j < J; j++, b += NR * 2) {
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)b));
    const __m256i w1 = NV == 2 ? _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(b + 16))) : w0;
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++) {
      int32_t two;
      std::memcpy(&two, x + i * Kp + 2 * j, 4);
      const __m256i xa = _mm256_set1_epi32(two);
      acc[i][0] = _mm256_add_epi32(_mm256_madd_epi16(xa, w0), acc[i][0]);
      if (NV == 2) acc[i][NV - 1] = _mm256_add_epi32(_mm256_madd_epi16(xa, w1), acc[i][NV - 1]);
      // (keeps GCC from hoisting the next rows' broadcasts ahead of these multiplies, which
      // takes registers the accumulators need: an accumulator then lives on the stack)
      ETNP_KEEP_IN_REGISTER(acc[i][0]);
      ETNP_KEEP_IN_REGISTER(acc[i][NV - 1]);
    }
  }
  const Q8Bounds8 bounds = q8_bounds8(out, lohi[0], lohi[1]);
  const int64_t cols = std::min<int64_t>(NV * 8, w.N - n0);
#pragma GCC unroll 2
  for (int v = 0; v < NV; v++) {
    if (cols <= 8 * v) break;  // (a second group of 8 columns past the panel's last)
    // column parameters padded to whole panels (pack_q8; the driver pads the bias)
    const int64_t c0 = n0 + 8 * v;
    const __m256i cs = U ? _mm256_setzero_si256() : _mm256_loadu_si256((const __m256i*)(w.col_sum.data() + c0));
    const __m256 sw = _mm256_loadu_ps((U ? uni.scale : w.scale.data()) + c0), bv = _mm256_loadu_ps(bias + c0);
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++) {
      __m256i q = acc[i][v];
      __m256 r;
      if (U) {
        r = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), sw, bv);
      } else {
        const __m256i off = _mm256_set1_epi32(q8_code_offset(a.zero_point[m0 + i]));
        q = _mm256_sub_epi32(q, _mm256_mullo_epi32(off, cs));
        const __m256 sa = _mm256_set1_ps(a.scale[m0 + i]), f = _mm256_cvtepi32_ps(q);
        r = a.scale_rows_first ? _mm256_fmadd_ps(_mm256_mul_ps(f, sa), sw, bv)
                               : _mm256_fmadd_ps(f, _mm256_mul_ps(sa, sw), bv);
      }
      if (out.accumulate) {
        const float* c = out.C + (m0 + i) * out.ldc + c0;
        if (cols >= 8 * (v + 1)) {
          r = _mm256_add_ps(r, _mm256_loadu_ps(c));
        } else {
          alignas(32) float prior[8] = {};
          for (int64_t j = 0; j < cols - 8 * v; j++) prior[j] = c[j];
          r = _mm256_add_ps(r, _mm256_load_ps(prior));
        }
      }
      store_q8_8(out, (m0 + i) * out.ldc + c0, std::min<int64_t>(8, cols - 8 * v), r, bounds);
    }
  }
}

// n bytes to int16 (the AVX2 tiles' activations)
ETNP_TARGET("avx2,fma") void widen_avx2(const uint8_t* src, int16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i*)(dst + i), _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i*)(src + i))));
  for (; i < n; i++) dst[i] = src[i];
}

using TileQ2 = void (*)(int64_t, int64_t, const int16_t*, const QActivations&, const PackedQ8&, const float*,
                        const float*, const QOutput&, const UniformRows&);
// [uniform][NV - 1][ROWS - 1]
template <bool U, int NV>
constexpr std::array<TileQ2, 4> tiles_avx2() {
  return {&tile_avx2<1, NV, U>, &tile_avx2<2, NV, U>, &tile_avx2<3, NV, U>, &tile_avx2<4, NV, U>};
}
const std::array<TileQ2, 4> kAvx2[2][2] = {{tiles_avx2<false, 1>(), tiles_avx2<false, 2>()},
                                           {tiles_avx2<true, 1>(), tiles_avx2<true, 2>()}};

using TileQ = void (*)(int64_t, int64_t, const QActivations&, const PackedQ8&, const float*, float, float,
                       const QOutput&, const Rows&);
template <int NV, bool U, int... R>
constexpr std::array<TileQ, sizeof...(R)> tiles_vnni(std::integer_sequence<int, R...>) {
  return {&tile_vnni<R + 1, NV, U>...};
}
// [uniform][ROWS - 1]
const std::array<TileQ, 8> kVnni2[2] = {tiles_vnni<2, false>(std::make_integer_sequence<int, 8>()),
                                        tiles_vnni<2, true>(std::make_integer_sequence<int, 8>())};
const std::array<TileQ, 8> kVnni1[2] = {tiles_vnni<1, false>(std::make_integer_sequence<int, 8>()),
                                        tiles_vnni<1, true>(std::make_integer_sequence<int, 8>())};

using TileQG = void (*)(int64_t, int64_t, const QActivations&, const PackedQ8&, const float*, float, float,
                        const QOutput&, const Rows&, int64_t, int64_t, const int32_t*);
template <bool U, int... R>
constexpr std::array<TileQG, sizeof...(R)> tiles_grouped(std::integer_sequence<int, R...>) {
  return {&tile_vnni_grouped<R + 1, U>...};
}
// [uniform][ROWS - 1]
const std::array<TileQG, 8> kVnniGrouped[2] = {tiles_grouped<false>(std::make_integer_sequence<int, 8>()),
                                               tiles_grouped<true>(std::make_integer_sequence<int, 8>())};

bool cpu_has_vnni() {
  static const bool v = cpu_has_avx512f() && os::cpu_id().avx512vnni;
  return v;
}

// Rows [m0, m1) x panels [p0, p1) by VNNI tiles: two panels a tile, 8 rows.
void vnni_rows(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
               const float* bias, float lo, float hi, const QOutput& out, const Rows& src) {
  for (int64_t p = p0; p < p1; p += 2)
    for (int64_t m = m0; m < m1; m += 8) {
      const int64_t mm = std::min<int64_t>(8, m1 - m);
      if (p + 2 <= p1) kVnni2[a.uniform][mm - 1](m, p, a, w, bias, lo, hi, out, src);
      else kVnni1[a.uniform][mm - 1](m, p, a, w, bias, lo, hi, out, src);
    }
}
#endif

// the AVX2 tiles' layout (k pairs), where they are the kernel that runs
bool pair_layout() {
#if defined(__x86_64__)
  static const bool pairs = !cpu_has_vnni() && cpu_has_avx2_fma();
  return pairs;
#else
  return false;
#endif
}

// the portable rows' layout (columns), where no SIMD kernel of ours runs (VNNI, AVX2, NEON)
bool columns_layout() {
#if defined(__x86_64__)
  static const bool columns = !cpu_has_vnni() && !cpu_has_avx2_fma();
#else
  static const bool columns = !cpu_has_neon();
#endif
  return columns;
}

}  // namespace

PackedQ8 pack_q8(int64_t K, int64_t N, const int8_t* W, int64_t rsw, int64_t csw, const float* scales) {
  PackedQ8 p;
  p.K = K;
  p.N = N;
  p.Kp = (K + 3) / 4 * 4;
  p.pairs = pair_layout();
  p.columns = columns_layout();
  const int64_t G = p.Kp / 4, J = p.Kp / 2, panels = (N + NR - 1) / NR;
  p.data.assign((size_t)(panels * G * NR * 4), 0);
  p.col_sum.assign((size_t)(panels * NR), 0);  // padded to whole panels with zeros (vector loads)
  p.scale.assign((size_t)(panels * NR), 0.f);
  std::copy(scales, scales + N, p.scale.begin());
  // w(k, n) goes to panel n / NR, group of `per` k's k / per, lane n % NR, slot k % per (per: 4
  // for the VNNI / NEON layout, 2 for AVX2's pairs, Kp - one group - for the portable columns):
  // stepped, not divided, per element
  const int64_t per = p.pairs ? 2 : p.columns ? p.Kp : 4, groups = p.pairs ? J : p.columns ? 1 : G;
  int8_t* data = p.data.data();
  for (int64_t n = 0; n < N; n++) {
    int8_t* col = data + ((n / NR) * groups * NR + n % NR) * per;  // group 0, lane n % NR
    const int8_t* src = W + n * csw;
    int32_t sum = 0;
    for (int64_t k0 = 0; k0 < K; k0 += per) {
      int8_t* dst = col + (k0 / per) * NR * per;
      for (int64_t k = k0; k < std::min(K, k0 + per); k++) {
        const int8_t q = src[k * rsw];
        dst[k - k0] = q;
        sum += q;
      }
    }
    p.col_sum[(size_t)n] = sum;
  }
  return p;
}

void qgemm_q8(ThreadPool* pool, int64_t M, const QActivations& a, const PackedQ8& w, const float* bias, float lo,
              float hi, const QOutput& out) {
  const bool codes = out.codes && out.grid;
  if (M <= 0 || w.N <= 0) return;
  const int64_t panels = (w.N + NR - 1) / NR;
  ThreadPool* tp = gemm_pool(pool, M, w.N, w.K);
#if defined(__x86_64__)
  // (the packed layout is the one of the kernel that runs: pack_q8 chose it by the same CPU test)
  static const bool vnni = cpu_has_vnni();
  const bool avx2 = w.pairs;
#else
  constexpr bool vnni = false, avx2 = false;
#endif
  // AVX2: the bias (or zeros) padded to whole panels; each task widens its rows' activations to
  // int16 itself (the tiles broadcast 4 of them at a time) - on the calling thread alone, the
  // widening was a serial step before every region
  thread_local std::vector<float> bias_padded, uni_scale;
  thread_local std::vector<int32_t> uni_corr;
  const float lohi[2] = {lo, hi};
  bool uniform = false;
  if (avx2) {
    bias_padded.assign((size_t)(panels * NR), 0.f);
    if (bias) std::copy(bias, bias + w.N, bias_padded.begin());
    uniform = !a.scale_rows_first;  // (the uniform tiles multiply by the product of the scales)
    for (int64_t m = 1; m < M && uniform; m++) uniform = a.zero_point[m] == a.zero_point[0] && a.scale[m] == a.scale[0];
    if (uniform) {  // (the products the per-row epilogue computes, so results are the same)
      uni_corr.resize((size_t)(panels * NR));
      uni_scale.resize((size_t)(panels * NR));
      for (int64_t n = 0; n < panels * NR; n++) {
        // (wrapping int32 arithmetic, as the per-row epilogue's vpmulld: a corrupt zero point
        // must not be undefined behaviour)
        uni_corr[(size_t)n] = (int32_t)((uint32_t)q8_code_offset(a.zero_point[0]) * (uint32_t)w.col_sum[(size_t)n]);
        uni_scale[(size_t)n] = a.scale[0] * w.scale[(size_t)n];
      }
    }
  }
  // (the caller's buffers: a thread_local named inside the task would be the worker's own)
  const float* bp = bias_padded.data();
#if defined(__x86_64__)
  const UniformRows uni{uni_corr.data(), uni_scale.data()};
  const auto& tiles = kAvx2[uniform ? 1 : 0];
#endif
  const int64_t MB = avx2 ? 4 : 8;  // rows a tile (the AVX2 tiles take 4, VNNI's up to 8)
  const int64_t rb = (M + MB - 1) / MB;
  // A task is `rows` row blocks x a range of panels, swept panel by panel: each panel's weights
  // come from memory once for all the task's rows, whose activations (at most ~256 KB) stay in
  // cache across the panels. (Row block by row block, a layer whose weights exceed the cache -
  // a 3x3x256x512 filter is 1.2 MB - read them from memory once per row block.)
  // Rows are also cut into at least four tasks a thread where there are enough (a long, thin
  // GEMM - 4096 pixels x 32 x 48 - would otherwise be one row task split over 3 panels).
  const int64_t row_bytes = MB * w.Kp * (avx2 ? 2 : 1);
  const int64_t nt = tp ? tp->num_threads() : 1;
  // (the portable rows widen each panel's weights to int16 once a task: on one thread, tasks of
  // up to 64 Ki results - their float rows, before codes, stay in cache)
  const int64_t rows = std::max<int64_t>(1, std::min({rb, (256 << 10) / row_bytes,
                                                      w.columns && nt == 1 ? (int64_t(1) << 16) / (MB * panels * NR)
                                                                           : rb / (nt * 4)}));
  const int64_t row_tasks = (rb + rows - 1) / rows;
  const GemmTasks grid = gemm_tasks(row_tasks, panels, tp);
  const int64_t split = grid.split, per = grid.per;
  auto blocks = [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; t++) {
      const int64_t b0 = (t / split) * rows, b1 = std::min(rb, b0 + rows);
      const int64_t m0 = b0 * MB, m1 = std::min(M, b1 * MB);
      const int64_t p0 = (t % split) * per, p1 = std::min(panels, p0 + per);
#if defined(__x86_64__)
      if (avx2) {  // snaps (or writes codes) in its epilogue
        thread_local std::vector<int16_t> xw;  // this thread's: the task's rows, widened
        const int64_t n = (m1 - m0) * w.Kp;
        if (xw.size() < (size_t)n) xw.resize((size_t)n);
        int16_t* x16 = xw.data();
        widen_avx2(a.data + m0 * w.Kp, x16, n);
        for (int64_t p = p0; p < p1; p++) {
          const auto& by_rows = tiles[w.N - p * NR > 8 ? 1 : 0];  // a ragged last panel's 8 columns or fewer: one half
          for (int64_t m = m0; m < m1; m += MB)
            by_rows[std::min(MB, M - m) - 1](m, p, x16 + (m - m0) * w.Kp, a, w, bp, lohi, out, uni);
        }
        continue;
      }
      if (vnni) {  // snaps (or writes codes) in its epilogue
        vnni_rows(m0, m1, p0, p1, a, w, bias, lo, hi, out, Rows());
        continue;
      }
#endif
      const int64_t n0 = p0 * NR, n1 = std::min(w.N, p1 * NR);
      auto rows = [&](float* c, int64_t ldc, bool accumulate) {
        if (w.columns) q8_rows_columns(m0, m1, p0, p1, a, w, bias, lo, hi, c, ldc, accumulate);
        else rows_groups4(m0, m1, p0, p1, a, w, bias, lo, hi, c, ldc, accumulate);
      };
      if (codes) {  // float results of the rows into this thread's buffer, then their codes
        thread_local std::vector<float> tmp;
        const int64_t cols = n1 - n0;
        if (tmp.size() < (size_t)((m1 - m0) * cols)) tmp.resize((size_t)((m1 - m0) * cols));
        rows(tmp.data(), cols, false);
        for (int64_t m = m0; m < m1; m++)
          grid_codes(*out.grid, out.code_shift, tmp.data() + (m - m0) * cols, out.codes + m * out.ldc + n0, cols);
        continue;
      }
      rows(out.C + m0 * out.ldc + n0, out.ldc, out.accumulate);
      if (out.grid) snap_block(out.C, out.ldc, m0, m1, n0, n1, *out.grid);
    }
  };
  if (tp) tp->parallel_for(row_tasks * split, 1, blocks);
  else blocks(0, row_tasks * split);
}

bool qgemm_q8_grouped_ok(const PackedQ8& w, int64_t taps, int64_t ICg, int64_t OCg) {
#if defined(__x86_64__)
  return qgemm_q8_indirect_ok(w, taps) && OCg > 0 && NR % OCg == 0 && w.N % OCg == 0 && ICg > 0 && ICg % 4 == 0 &&
         w.K == taps * ICg && (NR / OCg) * (ICg / 4) <= 16;
#else
  (void)w, (void)taps, (void)ICg, (void)OCg;
  return false;
#endif
}

bool qgemm_q8_grouped(int64_t M, const uint8_t* const* rows, int64_t taps, int64_t ICg, int64_t OCg, int64_t p0,
                      int64_t p1, const QActivations& a, const PackedQ8& w, const float* bias, float lo, float hi,
                      const QOutput& out) {
#if defined(__x86_64__)
  if (!qgemm_q8_grouped_ok(w, taps, ICg, OCg) || out.accumulate) return false;
  Rows src;
  src.rows = rows;
  src.taps = taps;
  int32_t lanes[NR];
  for (int64_t j = 0; j < NR; j++) lanes[j] = (int32_t)((j / OCg) * (ICg / 4));
  for (int64_t p = std::max<int64_t>(p0, 0); p < std::min(p1, (w.N + NR - 1) / NR); p++)
    for (int64_t m = 0; m < M; m += 8)
      kVnniGrouped[a.uniform][std::min<int64_t>(8, M - m) - 1](m, p, a, w, bias, lo, hi, out, src, ICg, OCg, lanes);
  return true;
#else
  (void)M, (void)rows, (void)taps, (void)ICg, (void)OCg, (void)p0, (void)p1, (void)a, (void)w, (void)bias, (void)lo,
      (void)hi, (void)out;
  return false;
#endif
}

bool qgemm_q8_indirect_ok(const PackedQ8& w, int64_t taps) {
#if defined(__x86_64__)
  static const bool vnni = cpu_has_vnni();
  return vnni && !w.pairs && taps > 0 && w.Kp == w.K && w.K % taps == 0 && (w.K / taps) % 4 == 0;
#else
  (void)w, (void)taps;
  return false;
#endif
}

bool qgemm_q8_indirect(int64_t M, const uint8_t* const* rows, int64_t taps, int64_t offset, int64_t p0, int64_t p1,
                       const QActivations& a, const PackedQ8& w, const float* bias, float lo, float hi,
                       const QOutput& out) {
#if defined(__x86_64__)
  if (!qgemm_q8_indirect_ok(w, taps) || out.accumulate) return false;
  p0 = std::max<int64_t>(p0, 0);
  p1 = std::min(p1, (w.N + NR - 1) / NR);
  if (M <= 0 || p0 >= p1) return true;
  Rows src;
  src.rows = rows;
  src.taps = taps;
  src.offset = offset;
  vnni_rows(0, M, p0, p1, a, w, bias, lo, hi, out, src);
  return true;
#else
  (void)M, (void)rows, (void)taps, (void)offset, (void)p0, (void)p1, (void)a, (void)w, (void)bias, (void)lo, (void)hi,
      (void)out;
  return false;
#endif
}

}  // namespace etnp
