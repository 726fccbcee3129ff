#include "kernels/compute/qgemm_generic.h"

#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/compute/portable_ops.h"
#include "os/thread_slot.h"

namespace etnp {
namespace {

constexpr int64_t NR = kQ8PanelCols;
// k steps a dot product sums in int32 before it is added to the total (wrapping): 32768 products
// of at most 255 * 128 in magnitude stay below 2^31
constexpr int64_t kChunk = 32768;

// acc[r][j] += sum_k x[r * ldx + k] * w[j * ldw + k] for R rows x C columns: int16 x int16 products
// summed in int32, one reduction loop over k with R * C accumulators - the compiler's dot-product
// reductions (SSE2 pmaddwd, 8 products an instruction; WASM i32x4.dot_i16x8_s; NEON smlal),
// 8 of them fitting the registers with the 2 + 4 loaded vectors. (K: a multiple of 8.)
template <int R, int C>
void dots(int64_t K, const int16_t* x, int64_t ldx, const int16_t* w, int64_t ldw, uint32_t (*acc)[NR]) {
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    const int64_t k1 = std::min(K, k0 + kChunk);
    int32_t s[R][C] = {};
    for (int64_t k = k0; k < k1; k++)
      for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) s[r][j] += (int32_t)x[r * ldx + k] * (int32_t)w[j * ldw + k];
    for (int r = 0; r < R; r++)
      for (int j = 0; j < C; j++) acc[r][j] += (uint32_t)s[r][j];
  }
}

// The same at a small K known to the compiler (KQ, a multiple of 8, in (kFixedMin, kFixedK]: a
// pointwise layer's channels), for columns [0, nc): per column, R dot products of KQ values, each
// a straight run of KQ / 8 vector multiply-adds and its sum - no loop control, no remainder loop,
// which at K = 24 - 96 cost a third of the time. (At KQ <= 16 GCC unrolls the k loop completely
// before its vectoriser sees it, and the products stay scalar: 2.3x slower than dots.)
constexpr int kFixedMin = 16, kFixedK = 96;
template <int R, int KQ>
void dots_fixed(const int16_t* x, int64_t ldx, const int16_t* w, int64_t ldw, int64_t nc, uint32_t (*acc)[NR]) {
  for (int64_t j = 0; j < nc; j++) {
    const int16_t* wj = w + j * ldw;
    for (int r = 0; r < R; r++) {
      int32_t s = 0;
      for (int k = 0; k < KQ; k++) s += (int32_t)x[r * ldx + k] * (int32_t)wj[k];
      acc[r][j] = (uint32_t)s;
    }
  }
}
using DotsFixed = void (*)(const int16_t*, int64_t, const int16_t*, int64_t, int64_t, uint32_t (*)[NR]);
template <int R, int... E>
constexpr std::array<DotsFixed, sizeof...(E)> fixed_tiles(std::integer_sequence<int, E...>) {
  return {&dots_fixed<R, kFixedMin + 8 * (E + 1)>...};
}
// [rows - 1][(KQ - kFixedMin) / 8 - 1]
constexpr int kFixedN = (kFixedK - kFixedMin) / 8;
const std::array<DotsFixed, kFixedN> kFixed[2] = {fixed_tiles<1>(std::make_integer_sequence<int, kFixedN>()),
                                                  fixed_tiles<2>(std::make_integer_sequence<int, kFixedN>())};

// n rows of k bytes (rows `ld` apart) to int16 rows of kq >= k, zeros past k
template <class T>
void widen_rows(const T* src, int64_t n, int64_t ld, int16_t* dst, int64_t kq) {
  for (int64_t r = 0; r < n; r++) {
    for (int64_t k = 0; k < ld; k++) dst[r * kq + k] = (int16_t)src[r * ld + k];
    for (int64_t k = ld; k < kq; k++) dst[r * kq + k] = 0;
  }
}

// The first n of 16 results to dst (a whole 16 as one fixed-size copy, which the compiler inlines)
template <class T>
inline void store_first(T* dst, const T* r, int64_t n) {
  if (n == NR) std::memcpy(dst, r, NR * sizeof(T));
  else
    for (int64_t j = 0; j < n; j++) dst[j] = r[j];
}

// Where a row's results go: the output, with the activation clamp and the grid's folded into one
// pair of bounds in grid units (q8_bounds: exactly the clamp, then the grid's) where there is a grid
struct RowOut {
  const QOutput& out;
  float lo, hi;      // the activation clamp
  float bl, bh;      // q8_bounds of [lo, hi] and the grid
  bool byte_codes;   // codes whose grid points are all bytes (grid_codes' first case): fused
};

// The terms of a row's epilogue for a panel's 16 columns: the zero points' correction
// (128 + za) * col_sum less the integer bias (PackedQ8::bias_q, or none) and the scale sa * sw -
// per panel where all rows share them (static int8)
struct RowTerms {
  uint32_t corr[NR];
  float scale[NR];
};
void row_terms(int32_t offset, float sa, const int32_t* col_sum, const float* sw, const int32_t* bias_q, RowTerms& t) {
  for (int64_t j = 0; j < NR; j++)
    t.corr[j] = (uint32_t)offset * (uint32_t)col_sum[j] - (bias_q ? (uint32_t)bias_q[j] : 0u);
  for (int64_t j = 0; j < NR; j++) t.scale[j] = sa * sw[j];
}

// Result j of the row before the clamp (q8_finish's formula; rows not scaled first)
inline float row_value(const uint32_t* acc, const RowTerms& rt, const float* bias, int64_t j) {
  return (float)(int32_t)(acc[j] - rt.corr[j]) * rt.scale[j] + bias[j];
}

// q8_finish over one row's 16 results (the panel's; `cols` of them stored, at element i of the
// output) and the store: one loop over all 16 lanes (no remainder loops) that the compiler
// vectorises as a whole - the scale, bias and clamp, then the output grid's snap or byte codes
// (snap_to_grid's and grid_codes' formulas on the folded bounds). The clamps are conditionals
// that become minps / maxps, with the NaN cases of the bit-blend selects (a NaN - which finite
// int8 sums cannot give - stays NaN, snapped; as codes, the grid's lowest).
enum class Store { Float, Snap, Codes };
template <Store S>
void finish_row(const uint32_t* acc, int64_t cols, const RowTerms& rt, const float* sw, const float* bias,
                const RowOut& o, int64_t i) {
  const QOutput& out = o.out;
  const auto value = [&](int64_t j) { return row_value(acc, rt, bias, j); };
  if (S == Store::Float) {
    const float lo = o.lo, hi = o.hi;
    float r[NR];
    for (int64_t j = 0; j < NR; j++) {  // (clamp_f32)
      const float x = value(j);
      const float t = lo > x ? lo : x;
      r[j] = hi < t ? hi : t;
    }
    store_first(out.C + i, r, cols);
    return;
  }
  const Int8Grid& g = *out.grid;
  const float inv = g.inv, bl = o.bl, bh = o.bh;
  if (S == Store::Codes) {
    uint8_t c[NR];
    const float glo = g.lo;
    const uint32_t shift = (uint32_t)out.code_shift;
    for (int64_t j = 0; j < NR; j++) {
      float t = value(j) * inv;
      t = bl > t ? bl : t;
      t = t > bh ? bh : t;
      t = t > glo ? t : glo;  // (NaN)
      c[j] = (uint8_t)(float_bits(t + 12582912.f) + shift);
    }
    store_first(out.codes + i, c, cols);
    return;
  }
  const float scale = g.scale;
  float r[NR];
  for (int64_t j = 0; j < NR; j++) {
    float t = value(j) * inv;
    t = bl > t ? bl : t;
    t = t > bh ? bh : t;
    r[j] = ((t + 12582912.f) - 12582912.f) * scale;
  }
  store_first(out.C + i, r, cols);
}

// The same where the results are added to C first (out.accumulate) or written as codes of a grid
// wider than the bytes: the clamp, then store_q8_row.
void finish_row_general(const uint32_t* acc, int64_t cols, const RowTerms& rt, const float* sw, const float* bias,
                        const RowOut& o, int64_t i) {
  float v[NR];
  for (int64_t j = 0; j < NR; j++) v[j] = row_value(acc, rt, bias, j);
  if (o.out.accumulate)
    for (int64_t j = 0; j < cols; j++) v[j] += o.out.C[i + j];
  for (int64_t j = 0; j < NR; j++) v[j] = clamp_f32(v[j], o.lo, o.hi);
  store_q8_row(o.out, i, v, cols);
}

// Rows scaled first (dynamic int8: float32 results; QActivations::scale_rows_first): the
// double-precision fma_exact, which the compiler vectorises best as loops over the `cols` results
// of their own, the zero-point correction in the first
void finish_rows_first(const uint32_t* acc, int64_t cols, int32_t offset, float sa, const int32_t* col_sum,
                       const float* sw, const float* bias, const RowOut& o, int64_t i) {
  float v[NR];
  for (int64_t j = 0; j < cols; j++) v[j] = (float)(int32_t)(acc[j] - (uint32_t)offset * (uint32_t)col_sum[j]);
  for (int64_t j = 0; j < cols; j++) v[j] = fma_exact(v[j] * sa, sw[j], bias[j]);
  if (o.out.accumulate)
    for (int64_t j = 0; j < cols; j++) v[j] += o.out.C[i + j];
  for (int64_t j = 0; j < cols; j++) v[j] = clamp_f32(v[j], o.lo, o.hi);
  if (o.out.grid) store_q8_row(o.out, i, v, cols);
  else store_first(o.out.C + i, v, cols);
}

using FinishRow = void (*)(const uint32_t*, int64_t, const RowTerms&, const float*, const float*, const RowOut&,
                           int64_t);
FinishRow finish_for(const QOutput& out, const RowOut& o) {
  if (out.accumulate || (out.grid && out.codes && !o.byte_codes)) return &finish_row_general;
  if (!out.grid) return &finish_row<Store::Float>;
  return out.codes ? &finish_row<Store::Codes> : &finish_row<Store::Snap>;
}

}  // namespace

void q8_rows_columns(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                     const float* bias, float lo, float hi, const QOutput& out) {
  const int64_t Kp = w.Kp, rows = m1 - m0;
  // the rows' activations and one panel's weights widened to int16 (this thread's buffers), rows
  // of Kq: whole vectors of 8, zeros past Kp
  const int64_t Kq = (Kp + 7) / 8 * 8;
  ETNP_THREAD_LOCAL(std::vector<int16_t>, xs);
  ETNP_THREAD_LOCAL(std::vector<int16_t>, ws);
  if (xs.size() < (size_t)(rows * Kq)) xs.resize((size_t)(rows * Kq));
  if (ws.size() < (size_t)(NR * Kq)) ws.resize((size_t)(NR * Kq));
  int16_t* x16 = xs.data();
  int16_t* w16 = ws.data();
  widen_rows(a.data + m0 * Kp, rows, Kp, x16, Kq);
  RowOut o{out, lo, hi, lo, hi, false};
  if (out.grid) {
    q8_bounds(out, lo, hi, o.bl, o.bh);
    const float sh = (float)out.code_shift;
    o.byte_codes = out.grid->lo + sh >= 0.f && out.grid->hi + sh <= 255.f;
  }
  const FinishRow finish = finish_for(out, o);
  const bool fixed = Kq > kFixedMin && Kq <= kFixedK;
  for (int64_t p = p0; p < p1; p++) {
    const int64_t n0 = p * NR, cols = std::min(NR, w.N - n0);
    const int64_t nc = (cols + 3) / 4 * 4;  // (a ragged panel's columns, in the tiles' fours)
    widen_rows(w.data.data() + p * NR * Kp, nc, Kp, w16, Kq);
    float bp[NR] = {};  // (the panel's bias, zeros past N)
    for (int64_t j = 0; bias && j < cols; j++) bp[j] = bias[n0 + j];
    const int32_t* cs = w.col_sum.data() + n0;
    const float* sw = w.scale.data() + n0;
    const int32_t* bq = w.bias_q.empty() ? nullptr : w.bias_q.data() + n0;
    RowTerms rt;
    if (a.uniform && !a.scale_rows_first) row_terms(q8_code_offset(a.zero_point[m0]), a.scale[m0], cs, sw, bq, rt);
    for (int64_t m = 0; m < rows; m += 2) {
      const int64_t rr = std::min<int64_t>(2, rows - m);
      uint32_t acc[2][NR] = {};
      if (fixed) {
        kFixed[rr - 1][(size_t)((Kq - kFixedMin) / 8 - 1)](x16 + m * Kq, Kq, w16, Kq, nc, acc);
      } else {
        for (int64_t j = 0; j < nc; j += 4) {
          if (rr == 2) dots<2, 4>(Kq, x16 + m * Kq, Kq, w16 + j * Kq, Kq, reinterpret_cast<uint32_t(*)[NR]>(&acc[0][j]));
          else dots<1, 4>(Kq, x16 + m * Kq, Kq, w16 + j * Kq, Kq, reinterpret_cast<uint32_t(*)[NR]>(&acc[0][j]));
        }
      }
      for (int64_t r = 0; r < rr; r++) {
        const int64_t row = m0 + m + r;
        if (a.scale_rows_first) {
          finish_rows_first(acc[r], cols, q8_code_offset(a.zero_point[row]), a.scale[row], cs, sw, bp, o,
                            row * out.ldc + n0);
          continue;
        }
        if (!a.uniform) row_terms(q8_code_offset(a.zero_point[row]), a.scale[row], cs, sw, bq, rt);
        finish(acc[r], cols, rt, sw, bp, o, row * out.ldc + n0);
      }
    }
  }
}

}  // namespace etnp
