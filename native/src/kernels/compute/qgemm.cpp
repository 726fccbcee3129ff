#include "kernels/compute/qgemm.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/gemm_tasks.h"
#include "kernels/compute/qgemm_avx2.h"
#include "kernels/compute/qgemm_generic.h"
#include "kernels/compute/qgemm_neon.h"
#include "kernels/compute/qgemm_q8_amx.h"
#include "kernels/compute/qgemm_q8_epilogue_avx512.h"
#include "os/cpu_id.h"
#include "os/thread_slot.h"
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
// (on aarch64 with NEON, each panel's inner loop is q8_row_panel_neon, or _dot)
void rows_groups4(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                  const float* bias, float lo, float hi, float* C, int64_t ldc, bool accumulate) {
  const int64_t G = w.Kp / 4;
#if defined(__aarch64__)
  static const bool neon = cpu_has_neon();
#endif
#if ETNP_NEON_DOT_KERNELS
  static const bool dot = cpu_has_neon_dot();
#endif
  for (int64_t m = m0; m < m1; m++) {
    const uint8_t* x = a.data + m * w.Kp;
    const int32_t offset = q8_code_offset(a.zero_point[m]);
    for (int64_t p = p0; p < p1; p++) {
      int32_t acc[NR] = {};
      const int8_t* b = w.data.data() + p * G * NR * 4;
#if ETNP_NEON_DOT_KERNELS
      if (dot) q8_row_panel_neon_dot(G, x, b, w.col_sum.data() + p * NR, acc);
      else
#endif
#if defined(__aarch64__)
      if (neon) q8_row_panel_neon(G, x, b, acc);
      else
#endif
      for (int64_t g = 0; g < G; g++, b += NR * 4)
        for (int64_t j = 0; j < NR; j++)
          for (int t = 0; t < 4; t++) acc[j] += (int32_t)x[g * 4 + t] * (int32_t)b[j * 4 + t];
      for (int64_t j = 0, n = p * NR; j < NR && n < w.N; j++, n++) {
        float& c = C[(m - m0) * ldc + n - p0 * NR];
        const uint32_t bq = w.bias_q.empty() ? 0u : (uint32_t)w.bias_q[(size_t)n];  // (wrapping, as the vector paths')
        c = q8_finish((int32_t)((uint32_t)acc[j] + bq), offset, w.col_sum[n], a.scale[m], w.scale[n], bias ? bias[n] : 0.f, lo, hi,
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

using q8_epilogue::acc_start;
using q8_epilogue::finish_panel;

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

PackedQ8 pack_q8(int64_t K, int64_t N, const int8_t* W, int64_t rsw, int64_t csw, const float* scales,
                 ThreadPool* pool) {
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
  // (whole panels a task: two threads never write parts of one cache line)
  auto columns = [&](int64_t pb, int64_t pe) {
    for (int64_t n = pb * NR; n < std::min(N, pe * NR); n++) {
      int8_t* col = data + ((n / NR) * groups * NR + n % NR) * per;  // group 0, lane n % NR
      const int8_t* src = W + n * csw;
      int32_t sum = 0;
      if (rsw == 1) {  // a column's k contiguous (a [N, K] filter): its sum in a loop of its own, runs copied
        for (int64_t k = 0; k < K; k++) sum += src[k];
        int8_t* dst = col;
        int64_t k0 = 0;
        // (whole groups by fixed-size copies, which compile to one move each)
        if (per == 4)
          for (; k0 + 4 <= K; k0 += 4, dst += NR * 4) std::memcpy(dst, src + k0, 4);
        else if (per == 2)
          for (; k0 + 2 <= K; k0 += 2, dst += NR * 2) std::memcpy(dst, src + k0, 2);
        for (; k0 < K; k0 += per, dst += NR * per) std::memcpy(dst, src + k0, (size_t)std::min(per, K - k0));
        p.col_sum[(size_t)n] = sum;
        continue;
      }
      int8_t* dst = col;
      for (int64_t k0 = 0; k0 < K; k0 += per, dst += NR * per) {
        for (int64_t k = k0; k < std::min(K, k0 + per); k++) {
          const int8_t q = src[k * rsw];
          dst[k - k0] = q;
          sum += q;
        }
      }
      p.col_sum[(size_t)n] = sum;
    }
  };
  if (pool && panels > 1 && K * N > (int64_t(1) << 16)) pool->parallel_for(panels, 1, columns);
  else columns(0, panels);
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
  static const bool amx = vnni && cpu_has_amx_int8();
  const bool avx2 = w.pairs;
#else
  constexpr bool vnni = false, avx2 = false;
#endif
#if defined(__x86_64__)
  // AVX2: the call's shared terms (qgemm_avx2.h), in the caller's buffers (a thread_local named
  // inside the task would be the worker's own); each task widens its rows' activations itself
  ETNP_THREAD_LOCAL(std::vector<float>, bias_buf);
  ETNP_THREAD_LOCAL(std::vector<float>, scale_buf);
  ETNP_THREAD_LOCAL(std::vector<int32_t>, corr_buf);
  const Q8Avx2Call call = avx2 ? q8_avx2_call(M, a, w, bias, lo, hi, bias_buf, corr_buf, scale_buf) : Q8Avx2Call();
#endif
  const int64_t MB = avx2 ? kQ8Avx2Rows : 8;  // rows a tile
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
  // up to 64 Ki results - their rows' activations, widened, stay in cache across the panels)
  int64_t rows = std::max<int64_t>(1, std::min({rb, (256 << 10) / row_bytes,
                                                w.columns && nt == 1 ? (int64_t(1) << 16) / (MB * panels * NR)
                                                                     : rb / (nt * 4)}));
#if defined(__x86_64__)
  if (amx && M >= 16) rows += rows & 1;  // (whole AMX tiles of 16 rows: row blocks in pairs)
#endif
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
        q8_avx2_rows(m0, m1, p0, p1, a, w, call, out);
        continue;
      }
      if (vnni) {  // snaps (or writes codes) in its epilogue; whole 16 rows on AMX tiles where there are
        const int64_t ma = amx ? m0 + (m1 - m0) / 16 * 16 : m0;
        if (ma > m0) qgemm_q8_amx_rows(m0, ma, p0, p1, a, w, bias, lo, hi, out);
        if (ma < m1) vnni_rows(ma, m1, p0, p1, a, w, bias, lo, hi, out, Rows());
        continue;
      }
#endif
      if (w.columns) {  // snaps (or writes codes) in its epilogue
        q8_rows_columns(m0, m1, p0, p1, a, w, bias, lo, hi, out);
        continue;
      }
      const int64_t n0 = p0 * NR, n1 = std::min(w.N, p1 * NR);
      if (codes) {  // float results of the rows into this thread's buffer, then their codes
        ETNP_THREAD_LOCAL(std::vector<float>, tmp);
        const int64_t cols = n1 - n0;
        if (tmp.size() < (size_t)((m1 - m0) * cols)) tmp.resize((size_t)((m1 - m0) * cols));
        rows_groups4(m0, m1, p0, p1, a, w, bias, lo, hi, tmp.data(), cols, false);
        for (int64_t m = m0; m < m1; m++)
          grid_codes(*out.grid, out.code_shift, tmp.data() + (m - m0) * cols, out.codes + m * out.ldc + n0, cols);
        continue;
      }
      rows_groups4(m0, m1, p0, p1, a, w, bias, lo, hi, out.C + m0 * out.ldc + n0, out.ldc, out.accumulate);
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
