#include "kernels/compute/qgemm_generic.h"

#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/compute/portable_ops.h"

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

// Where a row's results go: the output, with the activation clamp and the grid's folded into one
// pair of bounds in grid units (q8_bounds: exactly the clamp, then the grid's) where there is a grid
struct RowOut {
  const QOutput& out;
  float lo, hi;      // the activation clamp
  float bl, bh;      // q8_bounds of [lo, hi] and the grid
  bool byte_codes;   // codes whose grid points are all bytes (grid_codes' first case): fused
};

// q8_finish over one row's 16 results (the panel's; `cols` of them stored, at element i of the
// output), in one pass the compiler vectorises over all 16 lanes (no remainder loops): the scale,
// bias and clamp, then the output grid's snap or byte codes (grid_codes' and snap_to_grid's
// formulas on the folded bounds - a NaN, which finite int8 sums cannot give, takes the codes'
// lower bound and stays NaN snapped, as there)
void finish_row(const uint32_t* acc, int64_t cols, int32_t offset, float sa, const int32_t* col_sum, const float* sw,
                const float* bias, bool rows_first, const RowOut& o, int64_t i) {
  const QOutput& out = o.out;
  float v[NR];
  for (int64_t j = 0; j < NR; j++) v[j] = (float)(int32_t)(acc[j] - (uint32_t)offset * (uint32_t)col_sum[j]);
  if (rows_first)
    for (int64_t j = 0; j < NR; j++) v[j] = fma_exact(v[j] * sa, sw[j], bias[j]);
  else
    for (int64_t j = 0; j < NR; j++) v[j] = v[j] * (sa * sw[j]) + bias[j];
  if (out.accumulate)
    for (int64_t j = 0; j < cols; j++) v[j] += out.C[i + j];
  if (!out.grid || (out.codes && !o.byte_codes)) {
    for (int64_t j = 0; j < NR; j++) v[j] = clamp_f32(v[j], o.lo, o.hi);
    store_q8_row(out, i, v, cols);
    return;
  }
  const Int8Grid& g = *out.grid;
  const float inv = g.inv, bl = o.bl, bh = o.bh;
  if (out.codes) {
    uint8_t c[NR];
    const float glo = g.lo;
    const uint32_t shift = (uint32_t)out.code_shift;
    for (int64_t j = 0; j < NR; j++) {
      float t = v[j] * inv;
      t = select_f32(t < bl, bl, t);
      t = select_f32(t > bh, bh, t);
      t = select_f32(t >= glo, t, glo);  // (NaN)
      c[j] = (uint8_t)(float_bits(t + 12582912.f) + shift);
    }
    std::memcpy(out.codes + i, c, (size_t)cols);
    return;
  }
  const float scale = g.scale;
  for (int64_t j = 0; j < NR; j++) {
    float t = v[j] * inv;
    t = select_f32(t < bl, bl, t);
    t = select_f32(t > bh, bh, t);
    v[j] = ((t + 12582912.f) - 12582912.f) * scale;
  }
  std::memcpy(out.C + i, v, (size_t)cols * sizeof(float));
}

}  // namespace

void q8_rows_columns(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                     const float* bias, float lo, float hi, const QOutput& out) {
  const int64_t Kp = w.Kp, rows = m1 - m0;
  // the rows' activations and one panel's weights widened to int16 (this thread's buffers), rows
  // of Kq: whole vectors of 8, zeros past Kp
  const int64_t Kq = (Kp + 7) / 8 * 8;
  thread_local std::vector<int16_t> xs, ws;
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
  const bool fixed = Kq > kFixedMin && Kq <= kFixedK;
  for (int64_t p = p0; p < p1; p++) {
    const int64_t n0 = p * NR, cols = std::min(NR, w.N - n0);
    const int64_t nc = (cols + 3) / 4 * 4;  // (a ragged panel's columns, in the tiles' fours)
    widen_rows(w.data.data() + p * NR * Kp, nc, Kp, w16, Kq);
    float bp[NR] = {};  // (the panel's bias, zeros past N)
    for (int64_t j = 0; bias && j < cols; j++) bp[j] = bias[n0 + j];
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
        finish_row(acc[r], cols, q8_code_offset(a.zero_point[row]), a.scale[row], w.col_sum.data() + n0,
                   w.scale.data() + n0, bp, a.scale_rows_first, o, row * out.ldc + n0);
      }
    }
  }
}

}  // namespace etnp
