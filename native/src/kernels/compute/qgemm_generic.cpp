#include "kernels/compute/qgemm_generic.h"

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
// 8 of them fitting the registers with the 2 + 4 loaded vectors.
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

// q8_finish over one row's `cols` results, as loops the compiler vectorises (one per case)
void finish_row(const uint32_t* acc, int64_t cols, int32_t offset, float sa, const int32_t* col_sum, const float* sw,
                const float* bias, float lo, float hi, float* c, bool accumulate, bool rows_first) {
  float v[NR];
  for (int64_t j = 0; j < cols; j++) {
    const int32_t q = (int32_t)(acc[j] - (uint32_t)offset * (uint32_t)col_sum[j]);
    v[j] = (float)q;
  }
  if (rows_first)
    for (int64_t j = 0; j < cols; j++) v[j] = fma_exact(v[j] * sa, sw[j], bias ? bias[j] : 0.f);
  else
    for (int64_t j = 0; j < cols; j++) v[j] = v[j] * (sa * sw[j]) + (bias ? bias[j] : 0.f);
  if (accumulate)
    for (int64_t j = 0; j < cols; j++) v[j] += c[j];
  for (int64_t j = 0; j < cols; j++) c[j] = clamp_f32(v[j], lo, hi);
}

}  // namespace

void q8_rows_columns(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                     const float* bias, float lo, float hi, float* C, int64_t ldc, bool accumulate) {
  const int64_t Kp = w.Kp, rows = m1 - m0;
  // the rows' activations and one panel's weights widened to int16 (this thread's buffers)
  thread_local std::vector<int16_t> xs, ws;
  if (xs.size() < (size_t)(rows * Kp)) xs.resize((size_t)(rows * Kp));
  if (ws.size() < (size_t)(NR * Kp)) ws.resize((size_t)(NR * Kp));
  int16_t* x16 = xs.data();
  int16_t* w16 = ws.data();
  const uint8_t* x8 = a.data + m0 * Kp;
  for (int64_t i = 0; i < rows * Kp; i++) x16[i] = (int16_t)x8[i];
  for (int64_t p = p0; p < p1; p++) {
    const int8_t* w8 = w.data.data() + p * NR * Kp;
    for (int64_t i = 0; i < NR * Kp; i++) w16[i] = (int16_t)w8[i];
    const int64_t n0 = p * NR, cols = std::min(NR, w.N - n0);
    for (int64_t m = 0; m < rows; m += 2) {
      const int64_t rr = std::min<int64_t>(2, rows - m);
      uint32_t acc[2][NR] = {};
      for (int64_t j = 0; j < NR; j += 4) {
        if (rr == 2) dots<2, 4>(Kp, x16 + m * Kp, Kp, w16 + j * Kp, Kp, reinterpret_cast<uint32_t(*)[NR]>(&acc[0][j]));
        else dots<1, 4>(Kp, x16 + m * Kp, Kp, w16 + j * Kp, Kp, reinterpret_cast<uint32_t(*)[NR]>(&acc[0][j]));
      }
      for (int64_t r = 0; r < rr; r++) {
        const int64_t row = m0 + m + r;
        finish_row(acc[r], cols, q8_code_offset(a.zero_point[row]), a.scale[row], w.col_sum.data() + n0,
                   w.scale.data() + n0, bias ? bias + n0 : nullptr, lo, hi, C + (m + r) * ldc + n0 - p0 * NR, accumulate,
                   a.scale_rows_first);
      }
    }
  }
}

}  // namespace etnp
