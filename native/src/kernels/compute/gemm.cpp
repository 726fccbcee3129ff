#include "kernels/compute/gemm.h"

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>
#include <cstring>
#include <vector>

#include "kernels/compute/avx2_lanes.h"
#include "kernels/compute/cpu_features.h"
#include "kernels/compute/gemm_generic.h"
#include "kernels/compute/gemm_neon.h"
#include "kernels/compute/gemm_tasks.h"
#include "kernels/compute/half_convert.h"
#include "kernels/compute/portable_ops.h"
#include "os/thread_slot.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

// ep.rows_done over all M rows, in blocks shared by the threads (the GEMM paths whose tasks do not
// hold whole rows: once every task is finished)
void rows_done_after(ThreadPool* tp, int64_t M, const GemmEpilogue& ep) {
  if (!ep.rows_done) return;
  constexpr int64_t kRows = 64;
  auto run = [&](int64_t b, int64_t e) { ep.rows_done(ep.rows_ctx, b * kRows, std::min(M, e * kRows)); };
  const int64_t blocks = (M + kRows - 1) / kRows;
  if (tp) tp->parallel_for(blocks, 1, run);
  else run(0, blocks);
}

constexpr int MR = 6, NR = 16;

// Panel pn of B as float32, for the kernels that read float32 panels only (packed-A micro-kernels,
// portable tiles): in place, or a float16 panel widened into `wide`.
const float* panel_f32(const PackedB& B, int64_t pn, std::vector<float>& wide) {
  if (B.half.empty()) return B.data.data() + pn * NR * B.K;
  wide.resize((size_t)(NR * B.K));
  half_to_float_n(B.half.data() + pn * NR * B.K, wide.data(), NR * B.K);
  return wide.data();
}
template <typename BT>
const BT* panels(const PackedB& B) {
  if constexpr (std::is_same<BT, float>::value) return B.data.data();
  else return B.half.data();
}

// The fused residual add of rows [m0, m0 + rows) x columns [n0, n0 + cols) of C, just written.
void add_residual(const GemmEpilogue& ep, float* C, int64_t ldc, int64_t m0, int64_t rows, int64_t n0, int64_t cols) {
  for (int64_t i = 0; i < rows; i++) {
    float* c = C + (m0 + i) * ldc + n0;
    const float* r = ep.residual + (m0 + i) * ep.ldr + n0;
    const float lo = ep.res_min, hi = ep.res_max;
    for (int64_t j = 0; j < cols; j++) c[j] = clamp_f32(c[j] + r[j], lo, hi);  // (a loop that vectorises)
  }
}

#if defined(__x86_64__)
// 8 / 16 columns of a float32 or float16 panel row as float32 (F16C / AVX-512F widening: exact)
ETNP_TARGET_INLINE("avx2,fma,f16c") __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
ETNP_TARGET_INLINE("avx2,fma,f16c") __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}
ETNP_TARGET_INLINE("avx512f") __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
ETNP_TARGET_INLINE("avx512f") __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p));
}

// d[i] = h[i] widened, n a multiple of 16 (float16 panel rows)
ETNP_TARGET("avx512f") void widen_avx512(const uint16_t* h, float* d, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) _mm512_storeu_ps(d + i, load16(h + i));
}

ETNP_TARGET("avx2,fma") void micro_avx2(int64_t K, const float* a, const float* b, float* acc) {
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

ETNP_TARGET_INLINE("avx2,fma") void tile_row_avx2(float* c, __m256 v0, __m256 v1, __m256 bc0,
                                                                           __m256 bc1, const float* br, bool accumulate,
                                                                           __m256 vlo, __m256 vhi) {
  v0 = _mm256_add_ps(v0, bc0);
  v1 = _mm256_add_ps(v1, bc1);
  if (br) {
    __m256 b = _mm256_set1_ps(*br);
    v0 = _mm256_add_ps(v0, b);
    v1 = _mm256_add_ps(v1, b);
  }
  if (accumulate) {
    v0 = _mm256_add_ps(v0, _mm256_loadu_ps(c));
    v1 = _mm256_add_ps(v1, _mm256_loadu_ps(c + 8));
  }
  // maxps/minps return their second operand when either is NaN: the value goes second, so a NaN
  // result stays NaN, as in the scalar path
  _mm256_storeu_ps(c, _mm256_min_ps(vhi, _mm256_max_ps(vlo, v0)));
  _mm256_storeu_ps(c + 8, _mm256_min_ps(vhi, _mm256_max_ps(vlo, v1)));
}

// A full MR x NR tile straight from row-major A (no packing) into C, epilogue in registers:
// C[i][j] = clamp(sum_k A[i][k] * b[k][j] + bias_row[i] + bias_col[j] (+ C[i][j])).
template <typename BT>
ETNP_TARGET("avx2,fma,f16c") void tile_avx2(int64_t K, const float* A, int64_t rsa, const BT* b, float* C,
                                                   int64_t ldc, const float* bias_row, const float* bias_col,
                                                   bool accumulate, const float* lohi) {
  // (the clamp bounds come by pointer: float arguments arrive in vector registers, and keeping
  // them live across the loop made GCC spill an accumulator to the stack - a store/load chain
  // on every k that halved the kernel's speed)
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float *a0 = A, *a1 = A + rsa, *a2 = A + 2 * rsa, *a3 = A + 3 * rsa, *a4 = A + 4 * rsa, *a5 = A + 5 * rsa;
  for (int64_t k = 0; k < K; k++) {
    __m256 b0 = load8(b + k * NR), b1 = load8(b + k * NR + 8);
    __m256 x = _mm256_broadcast_ss(a0 + k);
    c00 = _mm256_fmadd_ps(x, b0, c00); c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a1 + k);
    c10 = _mm256_fmadd_ps(x, b0, c10); c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a2 + k);
    c20 = _mm256_fmadd_ps(x, b0, c20); c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a3 + k);
    c30 = _mm256_fmadd_ps(x, b0, c30); c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a4 + k);
    c40 = _mm256_fmadd_ps(x, b0, c40); c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a5 + k);
    c50 = _mm256_fmadd_ps(x, b0, c50); c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  const __m256 vlo = _mm256_broadcast_ss(lohi), vhi = _mm256_broadcast_ss(lohi + 1);
  __m256 bc0 = bias_col ? _mm256_loadu_ps(bias_col) : _mm256_setzero_ps();
  __m256 bc1 = bias_col ? _mm256_loadu_ps(bias_col + 8) : _mm256_setzero_ps();
#define ETNP_TILE_ROW(i, v0, v1) tile_row_avx2(C + (i) * ldc, v0, v1, bc0, bc1, bias_row ? bias_row + (i) : nullptr, accumulate, vlo, vhi)
  ETNP_TILE_ROW(0, c00, c01); ETNP_TILE_ROW(1, c10, c11); ETNP_TILE_ROW(2, c20, c21);
  ETNP_TILE_ROW(3, c30, c31); ETNP_TILE_ROW(4, c40, c41); ETNP_TILE_ROW(5, c50, c51);
#undef ETNP_TILE_ROW
}

// The edges of a row-major A on AVX2: ROWS (< 6) rows and/or the ragged last column panel
// (cols < 16, the panel's B zero-padded; partial stores and the column bias masked), straight from
// A into C with the epilogue in registers; NV = 1 when the panel's second half is empty (cols <= 8:
// narrow layers, the pointwise convolutions of few channels). (The packed path it replaces
// packed A and ran a scalar epilogue: ~30% of small-image CNNs.)
template <int ROWS, int NV, typename BT>
ETNP_TARGET("avx2,fma,f16c") void edge_avx2(int64_t K, const float* A, int64_t rsa, const BT* b, float* C,
                                                   int64_t ldc, const float* bias_row, const float* bias_col,
                                                   bool accumulate, const float* lohi, int64_t cols) {
  __m256 acc[NV][ROWS];
#pragma GCC unroll 6
  for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[v][i] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; k++) {
    __m256 bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) bv[v] = load8(b + k * NR + 8 * v);
#pragma GCC unroll 6
    for (int i = 0; i < ROWS; i++) {
      const __m256 x = _mm256_broadcast_ss(A + i * rsa + k);
      // (unrolled, or GCC keeps the accumulators in memory: a store each, every k step)
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) acc[v][i] = _mm256_fmadd_ps(x, bv[v], acc[v][i]);
    }
  }
  const __m256 vlo = _mm256_broadcast_ss(lohi), vhi = _mm256_broadcast_ss(lohi + 1);
#pragma GCC unroll 2
  for (int v = 0; v < NV; v++) {
    const int64_t n = std::min<int64_t>(8, cols - 8 * v);  // columns of this half (> 0)
    const __m256i m = first_lanes_avx2(n);
    const __m256 bc = bias_col ? _mm256_maskload_ps(bias_col + 8 * v, m) : _mm256_setzero_ps();
#pragma GCC unroll 6
    for (int i = 0; i < ROWS; i++) {
      float* c = C + i * ldc + 8 * v;
      __m256 r = _mm256_add_ps(acc[v][i], bc);
      if (bias_row) r = _mm256_add_ps(r, _mm256_broadcast_ss(bias_row + i));
      if (accumulate) r = _mm256_add_ps(r, _mm256_maskload_ps(c, m));
      r = _mm256_min_ps(vhi, _mm256_max_ps(vlo, r));  // NaN stays NaN
      if (n == 8) _mm256_storeu_ps(c, r);
      else _mm256_maskstore_ps(c, m, r);
    }
  }
}
template <typename BT>
using EdgeTile = void (*)(int64_t, const float*, int64_t, const BT*, float*, int64_t, const float*, const float*, bool,
                          const float*, int64_t);
// [rows - 1]: both halves of the panel, and the first half only (cols <= 8)
template <typename BT>
const EdgeTile<BT> kEdgeTiles[MR] = {&edge_avx2<1, 2, BT>, &edge_avx2<2, 2, BT>, &edge_avx2<3, 2, BT>,
                                     &edge_avx2<4, 2, BT>, &edge_avx2<5, 2, BT>, &edge_avx2<6, 2, BT>};
template <typename BT>
const EdgeTile<BT> kEdgeTilesNarrow[MR] = {&edge_avx2<1, 1, BT>, &edge_avx2<2, 1, BT>, &edge_avx2<3, 1, BT>,
                                           &edge_avx2<4, 1, BT>, &edge_avx2<5, 1, BT>, &edge_avx2<6, 1, BT>};

// The tiles of rows [m0, m0 + mm) x panels [pn0, pn1) of C = A * B on AVX2, straight from a
// row-major A (edge tiles for ragged rows / columns).
template <typename BT>
void rows_avx2(int64_t m0, int64_t mm, int64_t pn0, int64_t pn1, const float* A, int64_t rsa, const PackedB& B,
               float* C, int64_t ldc, const GemmEpilogue& ep, const float* lohi) {
  const int64_t N = B.N, K = B.K;
  for (int64_t pn = pn0; pn < pn1; pn++) {
    const int64_t n0 = pn * NR, nn = std::min<int64_t>(NR, N - n0);
    const float* br = ep.bias_row ? ep.bias_row + m0 : nullptr;
    const float* bc = ep.bias_col ? ep.bias_col + n0 : nullptr;
    const BT* b = panels<BT>(B) + pn * NR * K;
    if (mm == MR && nn == NR)
      tile_avx2<BT>(K, A + m0 * rsa, rsa, b, C + m0 * ldc + n0, ldc, br, bc, ep.accumulate, lohi);
    else
      (nn <= 8 ? kEdgeTilesNarrow<BT> : kEdgeTiles<BT>)[mm - 1](K, A + m0 * rsa, rsa, b, C + m0 * ldc + n0, ldc, br, bc,
                                                              ep.accumulate, lohi, nn);
    if (ep.residual) add_residual(ep, C, ldc, m0, mm, n0, nn);
  }
}

// AVX-512F tiles straight from row-major A (no packing) into C, epilogue in registers:
// C[i][j] = clamp(sum_k A[i][k] * b[k][j] + bias_col[j] + bias_row[i] (+ C[i][j])), for ROWS rows and
// NV adjacent 16-column panels (b0p, b1p), columns beyond N masked off (mask0, mask1).
// Full tiles are R x 2 panels or 2R x 1 panel (R = 6, 7 or 8, chosen to fit M): 12-16 accumulators
// hide the FMA latency. Row i of A starts at rows[i]; A[i][k] = rows[i][k], or rows[i][koff[k]]
// when IND (indirect: convolution taps read straight from the input, no im2col copy).
// A K range [k0, K) of a longer sum (Kpart): kFirst starts from zero and kMiddle from C's partial
// sums, both storing the raw partial sums back; kLast starts from C's partial sums and finishes as
// kWhole does. Each element's sum is the same sequence of FMAs in either case (bit-identical).
enum Kpart : int { kWhole = 0, kFirst = 1, kMiddle = 2, kLast = 3 };
template <int ROWS, int NV, bool IND, typename BT>
ETNP_TARGET("avx512f") void tile_avx512(int64_t k0, int64_t K, int part, const float* const* rows, const int32_t* koff,
                                                   const BT* b0p, const BT* b1p, float* C, int64_t ldc,
                                                   __mmask16 mask0, __mmask16 mask1, const float* bias_row,
                                                   const float* bias_col, bool accumulate, float lo, float hi) {
  const float* r[ROWS];
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; i++) r[i] = rows[i];
  __m512 acc[ROWS][NV];
  const __mmask16 masks[2] = {mask0, mask1};
  const bool from_c = part == kMiddle || part == kLast;
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[i][v] = from_c ? _mm512_maskz_loadu_ps(masks[v], C + i * ldc + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int64_t k = k0; k < K; k++) {
    __m512 b[NV];
    b[0] = load16(b0p + k * NR);
    if (NV > 1) b[NV - 1] = load16(b1p + k * NR);
    const int64_t kk = IND ? koff[k] : k;
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; i++) {
      __m512 x = _mm512_set1_ps(r[i][kk]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) acc[i][v] = _mm512_fmadd_ps(x, b[v], acc[i][v]);
    }
  }
  if (part == kFirst || part == kMiddle) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) _mm512_mask_storeu_ps(C + i * ldc + 16 * v, masks[v], acc[i][v]);
    return;
  }
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  __m512 bc[NV];
#pragma GCC unroll 2
  for (int v = 0; v < NV; v++) bc[v] = bias_col ? _mm512_maskz_loadu_ps(masks[v], bias_col + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; i++) {
    float* c = C + i * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) {
      __m512 r = _mm512_add_ps(acc[i][v], bc[v]);
      if (bias_row) r = _mm512_add_ps(r, _mm512_set1_ps(bias_row[i]));
      if (accumulate) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(masks[v], c + 16 * v));
      _mm512_mask_storeu_ps(c + 16 * v, masks[v], _mm512_min_ps(vhi, _mm512_max_ps(vlo, r)));  // NaN stays NaN
    }
  }
}

template <typename BT>
using Tile512 = void (*)(int64_t, int64_t, int, const float* const*, const int32_t*, const BT*, const BT*, float*,
                         int64_t, __mmask16, __mmask16, const float*, const float*, bool, float, float);
template <int NV, bool IND, typename BT, int... R>
constexpr std::array<Tile512<BT>, sizeof...(R)> tiles512(std::integer_sequence<int, R...>) {
  return {&tile_avx512<R + 1, NV, IND, BT>...};
}
// [indirect][rows - 1]: two panels up to 8 rows, one panel up to 16 rows
template <typename BT>
const std::array<Tile512<BT>, 8> kTwoPanels[2] = {tiles512<2, false, BT>(std::make_integer_sequence<int, 8>()),
                                                   tiles512<2, true, BT>(std::make_integer_sequence<int, 8>())};
template <typename BT>
const std::array<Tile512<BT>, 16> kOnePanel[2] = {tiles512<1, false, BT>(std::make_integer_sequence<int, 16>()),
                                                   tiles512<1, true, BT>(std::make_integer_sequence<int, 16>())};

ETNP_TARGET("avx512f") void add_residual_avx512(const GemmEpilogue& ep, float* C, int64_t ldc, int64_t m0,
                                                           int64_t rows, int64_t n0, int64_t cols) {
  const __m512 vlo = _mm512_set1_ps(ep.res_min), vhi = _mm512_set1_ps(ep.res_max);
  for (int64_t i = 0; i < rows; i++) {
    float* c = C + (m0 + i) * ldc + n0;
    const float* r = ep.residual + (m0 + i) * ep.ldr + n0;
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 m = cols - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (cols - j)) - 1);
      __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, c + j), _mm512_maskz_loadu_ps(m, r + j));
      _mm512_mask_storeu_ps(c + j, m, _mm512_min_ps(vhi, _mm512_max_ps(vlo, v)));  // NaN stays NaN
    }
  }
}

// Tile height for M rows: the one of 8, 7, 6 wasting the fewest rows in ragged tiles (convolution
// outputs are often 7^2 * 2^k pixels), the taller on ties.
// The AVX-512 driver sweeps K in chunks of kKChunk (a panel pair's chunk is 16 KiB) over row
// blocks of up to kRowBlockTiles tiles (64 rows): each chunk of B is read once from L2 / L3 for 64
// rows, not the whole panel pair once per 16 rows. Measured at 1 thread (CPU time, best of 5):
// BERT-base 243 -> 200 ms, ConvNeXt-tiny 92 -> 84, Swin-T 97 -> 92, Conv1d(512, 512, 7) on 1000
// frames 42 -> 34; ResNet-50 and Whisper-tiny unchanged (256 / 4 tiles: in between).
// With the k loop unrolled 4 times, chunks of 512 beat 128 (kernel alone, interleaved medians:
// 512^3 173 -> 193 GFLOP/s, 128x3072x768 164 -> 172, 64x2048x2048 159 -> 177; the full-size fp32
// zoo 2-5% faster at 1 and 2 threads: BERT-base, ViT-B/16, ResNet-50, ConvNeXt, Swin-T, EffNetV2-S).
constexpr int64_t kKChunk = 512;
constexpr int64_t kRowBlockTiles = 8;

int64_t tile_rows_avx512(int64_t M) {
  int64_t best = 8, waste = (8 - M % 8) % 8;
  for (int64_t r : {7, 6}) {
    int64_t w = (r - M % r) % r;
    if (w < waste) { best = r; waste = w; }
  }
  return best;
}

inline __mmask16 cols_mask(int64_t cols) { return cols >= 16 ? (__mmask16)0xFFFF : cols <= 0 ? 0 : (__mmask16)((1u << cols) - 1); }

// Rows [m0, m0 + mm) x column panels [pn0, pn1) of C = A * B in R x 32 / 2R x 16 tiles; rows[i]
// is where row m0 + i of A starts (koff: indirect tap offsets, or null).
template <typename BT>
void rows_avx512(int64_t R, int64_t m0, int64_t mm, int64_t pn0, int64_t pn1, const float* const* rows,
                 const int32_t* koff, const PackedB& B, float* C, int64_t ldc, const GemmEpilogue& ep) {
  const int64_t N = B.N, K = B.K;
  const int ind = koff ? 1 : 0;
  const float* bias_row = ep.bias_row ? ep.bias_row + m0 : nullptr;
  // a long K in chunks (the block's rows sweep each chunk of a panel pair while it is in L1,
  // not the whole panel pair once per tile: a K of thousands streamed it from L2 / L3 per tile);
  // the partial sums wait in C (not where C already holds values to accumulate onto)
  const int64_t kc = (K > 3 * kKChunk / 2 && !ep.accumulate) ? kKChunk : K;
  for (int64_t pn = pn0; pn < pn1;) {
    int64_t n0 = pn * NR;
    const BT* b0 = panels<BT>(B) + pn * NR * K;
    const float* bc = ep.bias_col ? ep.bias_col + n0 : nullptr;
    const bool two = pn + 1 < pn1;  // two panels, in R-row tiles; else the last one, in tiles of up to 2R rows (direct)
    // (an indirect tile of 2R rows keeps 16 row pointers and the tap offsets: more than the
    // general registers, reloaded from the stack every k - R rows ran a 3x3 convolution to 16
    // channels, K = 144, ~4% faster; a direct one of K = 16 was ~4% slower in R rows)
    const int64_t step = two || ind ? R : 2 * R;
    for (int64_t k0 = 0; k0 < K; k0 += kc) {
      const int64_t k1 = K - k0 < kc + kc / 2 ? K : k0 + kc;  // (no short last chunk)
      const int part = k1 - k0 == K ? kWhole : k0 == 0 ? kFirst : k1 == K ? kLast : kMiddle;
      // the block's tiles over k in [ka, kb) of panels p0 (, p1); A's rows start `shift` further on
      auto sweep = [&](const auto* p0, const auto* p1, int64_t ka, int64_t kb, const int32_t* ko, int64_t shift) {
        using T = std::remove_cv_t<std::remove_pointer_t<decltype(p0)>>;
        for (int64_t i = 0; i < mm; i += step) {
          const int64_t r = std::min<int64_t>(step, mm - i);
          const float* rr[16];
          for (int64_t j = 0; j < r; j++) rr[j] = rows[i + j] + shift;
          if (two)
            kTwoPanels<T>[ind][r - 1](ka, kb, part, rr, ko, p0, p1, C + (m0 + i) * ldc + n0, ldc, cols_mask(N - n0),
                                      cols_mask(N - n0 - 16), bias_row ? bias_row + i : nullptr, bc, ep.accumulate,
                                      ep.min, ep.max);
          else
            kOnePanel<T>[ind][r - 1](ka, kb, part, rr, ko, p0, nullptr, C + (m0 + i) * ldc + n0, ldc,
                                     cols_mask(N - n0), 0, bias_row ? bias_row + i : nullptr, bc, ep.accumulate, ep.min,
                                     ep.max);
          if (k1 == K && ep.residual)
            add_residual_avx512(ep, C, ldc, m0 + i, r, n0, std::min<int64_t>(two ? 2 * NR : NR, N - n0));
        }
      };
      if constexpr (!std::is_same<BT, float>::value) {
        if (mm > step) {  // several tiles read the chunk: widened once (per tile, the conversions
          // take the FMA ports: a compute-bound GEMM ran ~10% slower); one tile widens in registers
          ETNP_THREAD_LOCAL(std::vector<float>, wide);
          const int64_t kn = k1 - k0;
          wide.resize((size_t)(2 * kn * NR));
          widen_avx512(b0 + k0 * NR, wide.data(), kn * NR);
          if (two) widen_avx512(b0 + NR * K + k0 * NR, wide.data() + kn * NR, kn * NR);
          sweep(wide.data(), wide.data() + kn * NR, 0, kn, koff ? koff + k0 : nullptr, koff ? 0 : k0);
          k0 = k1 - kc;
          continue;
        }
      }
      sweep(b0, two ? b0 + NR * K : nullptr, k0, k1, koff, 0);
      k0 = k1 - kc;  // (k0 += kc next: k1)
    }
    pn += two ? 2 : 1;
  }
}
#endif

using Micro = void (*)(int64_t, const float*, const float*, float*);

// The packed-A micro-kernel of this CPU path, or null for the portable tiles (gemm_generic.h).
Micro pick_micro() {
#if defined(__x86_64__)
  if (cpu_has_avx2_fma()) return &micro_avx2;
#elif defined(__aarch64__)
  if (cpu_has_neon()) return &sgemm_micro_neon_6x16;
#endif
  return nullptr;
}

}  // namespace

#if defined(__x86_64__)
namespace {
// AVX-512 driver: 8R-row blocks (one block when M <= 8R: each pair of B panels is then read once
// for all rows, unless its column pairs are too few to share among the threads) x column ranges,
// at least four tasks a thread. Rows come from `rows` (indirect,
// with koff) or are A + m * rsa.
void sgemm_rows_avx512(ThreadPool* tp, int64_t M, const float* const* rows, const float* A, int64_t rsa,
                       const int32_t* koff, const PackedB& B, float* C, int64_t ldc, const GemmEpilogue& ep) {
  const int64_t nb = (B.N + NR - 1) / NR;
  const int64_t R = tile_rows_avx512(M);
  int64_t MB = M <= 8 * R ? M : kRowBlockTiles * R;  // (<= 64: local[] below)
  if (tp && MB == M && M >= 2 * R) {  // one row block with too few column pairs to share: split the rows too
    const int64_t pairs = (nb + 1) / 2, want = 4 * tp->num_threads();
    if (pairs < want) {
      const int64_t blocks = std::min((want + pairs - 1) / pairs, M / R);
      MB = ((M + blocks - 1) / blocks + R - 1) / R * R;
    }
  }
  const int64_t rb = (M + MB - 1) / MB;
  const GemmTasks tasks = gemm_tasks(rb, nb, tp);
  const int64_t per = tasks.per, split = tasks.split;
  auto blocks = [&](int64_t b, int64_t e) {
    const float* local[64];  // MB <= 64 row starts of a direct A
    for (int64_t t = b; t < e; t++) {
      int64_t m0 = (t / split) * MB, mm = std::min<int64_t>(MB, M - m0), cs = t % split;
      const float* const* r = rows ? rows + m0 : local;
      if (!rows)
        for (int64_t i = 0; i < mm; i++) local[i] = A + (m0 + i) * rsa;
      if (B.half.empty()) rows_avx512<float>(R, m0, mm, cs * per, std::min(nb, (cs + 1) * per), r, koff, B, C, ldc, ep);
      else rows_avx512<uint16_t>(R, m0, mm, cs * per, std::min(nb, (cs + 1) * per), r, koff, B, C, ldc, ep);
      if (ep.rows_done && split == 1) ep.rows_done(ep.rows_ctx, m0, m0 + mm);  // (whole rows, in cache)
    }
  };
  if (tp) tp->parallel_for(rb * split, 1, blocks);
  else blocks(0, rb * split);
  if (split > 1) rows_done_after(tp, M, ep);
}
}  // namespace
#endif

bool sgemm_packed_indirect(ThreadPool* pool, int64_t M, const float* const* rows, const int32_t* koff,
                           const PackedB& B, float* C, int64_t ldc, const GemmEpilogue& ep) {
#if defined(__x86_64__)
  if (!cpu_has_avx512f()) return false;
  if (M <= 0 || B.N <= 0) return true;
  sgemm_rows_avx512(gemm_pool(pool, M, B.N, B.K), M, rows, nullptr, 0, koff, B, C, ldc, ep);
  return true;
#else
  return false;
#endif
}

void sgemm_packed(ThreadPool* pool, int64_t M, const float* A, int64_t rsa, int64_t csa, const PackedB& B, float* C,
                  int64_t ldc, const GemmEpilogue& ep) {
  int64_t N = B.N, K = B.K;
  if (M <= 0 || N <= 0) return;
  ThreadPool* tp = gemm_pool(pool, M, N, K);
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma(), avx512 = cpu_has_avx512f();
  if (avx512 && csa == 1) {
    sgemm_rows_avx512(tp, M, nullptr, A, rsa, nullptr, B, C, ldc, ep);
    return;
  }
  static const bool f16c = cpu_has_f16c();
  const bool direct = avx2 && csa == 1 && (B.half.empty() || f16c);
#endif
  static const Micro micro = pick_micro();
  // Tiles of MR rows x NR columns; each task packs its A panel once and sweeps its columns.
  const int64_t mb = (M + MR - 1) / MR, nb = (N + NR - 1) / NR;
  const GemmTasks grid = gemm_tasks(mb, nb, tp);
  const int64_t col_split = grid.split, cols_per = grid.per;
  const float lohi[2] = {ep.min, ep.max};
  auto tasks = [&](int64_t b, int64_t e) {
    alignas(32) float acc[MR * NR];
    ETNP_THREAD_LOCAL(std::vector<float>, pa);  // this thread's packed A panel, grows only
    ETNP_THREAD_LOCAL(std::vector<float>, wide);  // a float16 panel widened (panel_f32), grows only
    if (micro && pa.size() < (size_t)(MR * K)) pa.resize((size_t)(MR * K));
    int64_t last_pm = -1;
    for (int64_t t = b; t < e; t++) {
      int64_t pm = t / col_split, cs = t % col_split;
      int64_t m0 = pm * MR, mm = std::min<int64_t>(MR, M - m0);
      int64_t pn0 = cs * cols_per, pn1 = std::min(nb, (cs + 1) * cols_per);
#if defined(__x86_64__)
      if (direct) {  // a row-major A: whole tiles without packing A
        if (B.half.empty()) rows_avx2<float>(m0, mm, pn0, pn1, A, rsa, B, C, ldc, ep, lohi);
        else rows_avx2<uint16_t>(m0, mm, pn0, pn1, A, rsa, B, C, ldc, ep, lohi);
        continue;
      }
#endif
      if (!micro) {  // the portable tiles, reading A in place (any strides)
        for (int64_t pn = pn0; pn < pn1; pn++) {
          const int64_t n0 = pn * NR, nn = std::min<int64_t>(NR, N - n0);
          sgemm_tile_generic(K, mm, nn, A + m0 * rsa, rsa, csa, panel_f32(B, pn, wide), C + m0 * ldc + n0, ldc,
                             ep.bias_row ? ep.bias_row + m0 : nullptr, ep.bias_col ? ep.bias_col + n0 : nullptr,
                             ep.accumulate, ep.min, ep.max);
          if (ep.residual) add_residual(ep, C, ldc, m0, mm, n0, nn);
        }
        continue;
      }
      if (pm != last_pm) {
        for (int64_t k = 0; k < K; k++)
          for (int i = 0; i < MR; i++) pa[k * MR + i] = i < mm ? A[(m0 + i) * rsa + k * csa] : 0.f;
        last_pm = pm;
      }
      for (int64_t pn = pn0; pn < pn1; pn++) {
        micro(K, pa.data(), panel_f32(B, pn, wide), acc);
        int64_t n0 = pn * NR, nn = std::min<int64_t>(NR, N - n0);
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
        if (ep.residual) add_residual(ep, C, ldc, m0, mm, n0, nn);
      }
    }
  };
  if (tp) tp->parallel_for(mb * col_split, 1, tasks);
  else tasks(0, mb * col_split);
  rows_done_after(tp, M, ep);
}

}  // namespace etnp
