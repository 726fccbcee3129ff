// A 1-D convolution read straight from channel-major rows (an NCHW input's image rows, one row
// a channel): out(p, oc) = clamp(bias[oc] + sum_{c, j} x[c * xs + p + j * dw] * w(j * C + c, oc)).
// The output tile is kept in registers as 8 output channels x 16 * pv positions (pv vectors of
// 16 consecutive positions, loaded straight from each input row: no im2col, no broadcast of the
// input), the weights broadcast from the GEMM's packed B (16-column panels, k = j * C + c: the
// same packing as a KH = 1 convolution's), and the tile is transposed to position-major rows on
// the way out. Long signals with few channels (a vocoder's Conv1d(32, 32, 11) on 25600 samples)
// run near the FMA peak this way, where a GEMM over im2col rows broadcasts every input element.
// AVX-512 only (false, computing nothing, elsewhere: the caller takes another path).
#pragma once
#include <cstdint>

namespace etnp {

struct Conv1dRowsTile {
  const float* x = nullptr;  // position 0's first tap in channel 0's row; channel c's row is c * xs further
  int64_t xs = 0;            // floats between two channels' rows
  int64_t C = 0, KW = 0, dw = 1;
  const float* wpanel = nullptr;  // packed B (K = KW * C rows of 16 floats a panel), at the 8 channels' first column
  int64_t K = 0;                  // packed B's rows (the panel stride is 16 * K floats)
  const float* bias = nullptr;    // 8 values, or null
  float lo = 0, hi = 0;           // the clamp
  float* y = nullptr;             // position p's 8 outputs at y + p * ldy
  int64_t ldy = 0;
  // channel_major: channel i's 16 * pv outputs at y + i * ldy instead (an NCHW output's rows: no
  // transpose); then also, after the clamp, res[0] and then res[1] (each laid out as y, rows ldr
  // apart) added, each sum clamped to [res_lo[k], res_hi[k]], where set, and where `leaky`,
  // x > 0 ? x : x * slope
  bool channel_major = false;
  const float* res[2] = {nullptr, nullptr};
  int64_t ldr = 0;
  float res_lo[2] = {0, 0}, res_hi[2] = {0, 0};
  bool leaky = false;
  float slope = 0;
  // and where y2 is set (channel_major), y2's rows (laid out as y) get x > 0 ? x : x * slope2 of
  // that final result
  float* y2 = nullptr;
  float slope2 = 0;
  // a channel range [c0, c0 + C) of a longer sum over Cw channels (Cw: the weights' channels, C when
  // 0; wpanel and x then start at channel c0): `init`, when set, holds the sums so far and
  // `partial`, when set, receives the raw sums (no bias, clamp or store to y); both channel-major,
  // 8 rows of 48 floats
  int64_t Cw = 0;
  const float* init = nullptr;
  float* partial = nullptr;
};

// pv in 1..3: positions [0, 16 * pv) of the 8 output channels.
bool conv1d_rows_tile(const Conv1dRowsTile& t, int pv);

// Whether conv1d_rows_tile runs on this CPU path.
bool conv1d_rows_available();

}  // namespace etnp
