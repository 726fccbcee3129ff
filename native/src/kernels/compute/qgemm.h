// int8 GEMM for dynamically quantized activations x per-channel int8 weights (XNNPACK's
// qd8 x qc8w FullyConnected): C[m][n] = clamp(sa[m] * sw[n] * sum_k (qa[m][k] - za[m]) * qw[k][n]
// + bias[n]), accumulated exactly in int32. Activations enter as uint8 (qa + 128) so that the
// AVX-512 VNNI kernel (vpdpbusd: u8 x s8 dot products of 4) applies; the column sums of the
// weights remove the +128 and the zero points afterwards. A portable kernel (qgemm_generic.h)
// covers other CPUs.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/compute/q8_output.h"
#include "kernels/compute/quantize_row.h"
#include "threadpool/threadpool.h"
#include "util/float_buffer.h"
#include "util/packed_array.h"

namespace etnp {

constexpr int64_t kQ8PanelCols = 16;  // the columns of a packed panel

// Weights packed once: 16-column panels, K zero padded to Kp, in groups of 4 (VNNI, NEON):
// for panel p, group g, column j, element t: data[((p * G + g) * 16 + j) * 4 + t] = w(4g + t, 16p + j),
// or, where the AVX2 kernel runs (`pairs`), in pairs: data[((p * J + i) * 16 + j) * 2 + t] = w(2i + t, 16p + j),
// or, for the portable kernel (`columns`), a column's Kp weights in a row: data[(16p + j) * Kp + k] = w(k, 16p + j).
struct PackedQ8 {
  int64_t K = 0, N = 0, Kp = 0;    // Kp: K rounded up to a multiple of 4
  bool pairs = false, columns = false;
  PackedArray<int8_t, UninitAllocator<int8_t>> data;  // (a view where a weight cache file holds it; 64-byte aligned)
  PackedArray<int32_t> col_sum;    // sum_k w(k, n), zero-padded to whole 16-column panels
  PackedArray<float> scale;        // per output column, zero-padded likewise
  // Empty, or integers added to the int32 sums before the scale (zero-padded likewise): a static-int8
  // node requantized as XNNPACK does it, result = float(sum + bias_q[n]) * scale[n] in grid units
  // (xnn_static_q8.cpp: exact_requant), with the activations' scale 1 and no float bias.
  PackedArray<int32_t> bias_q;
};
// w(k, n) = W[k * rsw + n * csw] (int8 values); panels packed in parallel on POOL where given
PackedQ8 pack_q8(int64_t K, int64_t N, const int8_t* W, int64_t rsw, int64_t csw, const float* scales,
                 ThreadPool* pool = nullptr);

struct QActivations {
  const uint8_t* data = nullptr;   // [M][Kp], qa + 128, zero padded
  const float* scale = nullptr;    // per row
  const int32_t* zero_point = nullptr;
  bool uniform = false;            // every row's scale and zero point are row 0's (static int8)
  // dynamically quantized rows (qd8): results (acc * scale[m]) * w.scale[n] + bias with one
  // rounding for the multiply-add, as XNNPACK's qd8-f32-qc8w GEMMs; else acc * (scale[m] *
  // w.scale[n]) + bias
  bool scale_rows_first = false;
};

void qgemm_q8(ThreadPool* pool, int64_t M, const QActivations& a, const PackedQ8& w, const float* bias, float lo,
              float hi, const QOutput& out);
inline void qgemm_q8(ThreadPool* pool, int64_t M, const QActivations& a, const PackedQ8& w, const float* bias, float lo,
                     float hi, float* C, int64_t ldc, const Int8Grid* snap_to = nullptr) {
  QOutput out;
  out.C = C;
  out.ldc = ldc;
  out.grid = snap_to;
  qgemm_q8(pool, M, a, w, bias, lo, hi, out);
}

// The same product where row m's K activations are `taps` runs of K / taps bytes (a multiple of
// 4), run t at rows[m * taps + t] + offset: a convolution read straight from its input's codes,
// each run one tap's input channels (or the padding's codes), nothing unfolded. Panels [p0, p1)
// (16 columns each; out points at column 0). One thread; AVX-512 VNNI only (K unpadded, no
// accumulate): false, computing nothing, elsewhere (then unfold).
bool qgemm_q8_indirect(int64_t M, const uint8_t* const* rows, int64_t taps, int64_t offset, int64_t p0, int64_t p1,
                       const QActivations& a, const PackedQ8& w, const float* bias, float lo, float hi,
                       const QOutput& out);
// Whether qgemm_q8_indirect runs for these weights and taps here.
bool qgemm_q8_indirect_ok(const PackedQ8& w, int64_t taps);

// A grouped convolution's groups of OCg output channels (OCg dividing 16) several to a 16-column
// panel: w packs all N = G * OCg columns, column n's K = taps * ICg values its own group's filter
// (pack_q8 of the [N][K] filter), and rows are per output pixel `taps` pointers to a pixel's
// channels (group 0's first; the padding's pointer to as many codes of 0). Panels [p0, p1) of
// rows [0, M): lane j of panel p reads group p * 16 / OCg + j / OCg's ICg channels of each tap.
// One thread; AVX-512 VNNI only, where ICg is a multiple of 4 and a panel's groups' channels fit
// 64 bytes (qgemm_q8_grouped_ok): false, computing nothing, elsewhere.
bool qgemm_q8_grouped(int64_t M, const uint8_t* const* rows, int64_t taps, int64_t ICg, int64_t OCg, int64_t p0,
                      int64_t p1, const QActivations& a, const PackedQ8& w, const float* bias, float lo, float hi,
                      const QOutput& out);
bool qgemm_q8_grouped_ok(const PackedQ8& w, int64_t taps, int64_t ICg, int64_t OCg);

}  // namespace etnp
