// depthwise_q8's portable path: each input row an output row reads is converted once to float32
// (its codes minus the code of 0: exact) into a small cache of rows, so that the taps' inner loop
// is a float multiply and add on loaded values - the conversion of every code at every tap that
// reads it (9 times for a 3 x 3 filter at stride 1) was most of the work on SSE2. The sums are the
// same exact integers in float32 as the other paths' (depthwise_q8.h); the epilogue is theirs.
#include "kernels/compute/depthwise_q8_generic.h"

#include <algorithm>
#include <vector>

#include "kernels/compute/portable_ops.h"
#include "os/thread_slot.h"
#include "util/compiler.h"

namespace etnp {
namespace {

constexpr int CB = 8;              // channels a block (P x 8 accumulators: 8 registers of 4 lanes)
constexpr int kPixels = 4;         // output pixels a step where all their taps lie inside the width
constexpr int64_t kRowSlack = 16;  // zeros past a converted row: a last partial block reads them

// The converted input rows (n * H + ih) of the output row at hand: `slots` of them, each W * C
// floats and the slack.
struct RowCache {
  std::vector<float> data;
  std::vector<int64_t> tag;  // the row a slot holds, or -1
  int64_t len = 0;

  void reset(int64_t slots, int64_t row_len) {
    len = row_len + kRowSlack;
    if (data.size() < (size_t)(slots * len)) data.resize((size_t)(slots * len));
    tag.assign((size_t)slots, -1);
    for (int64_t s = 0; s < slots; s++) std::fill_n(data.data() + s * len + row_len, kRowSlack, 0.f);
  }
  // Row `row` (codes at src); `keep`: the rows the output row reads (their slots stay)
  const float* get(int64_t row, const uint8_t* src, float pz, const int64_t* keep, int64_t nkeep) {
    const int64_t slots = (int64_t)tag.size();
    for (int64_t s = 0; s < slots; s++)
      if (tag[(size_t)s] == row) return data.data() + s * len;
    int64_t s = 0;
    while (s < slots && tag[(size_t)s] >= 0 && std::find(keep, keep + nkeep, tag[(size_t)s]) != keep + nkeep) s++;
    float* d = data.data() + s * len;  // (slots >= the rows an output row reads: one is free)
    const int64_t n = len - kRowSlack;
    for (int64_t i = 0; i < n; i++) d[i] = (float)src[i] - pz;
    tag[(size_t)s] = row;
    return d;
  }
};

// acc[p][l] = sum over the taps t of rows[t][p * xstep + c0 + l] * wd[wrow[t] + c0 + l]: P pixels
// x 8 channels, the accumulators kept in registers (GCC: SLP only - its loop vectoriser took the
// tap loop and kept them on the stack; each tap's weights copied to a local array first, the sums
// leaving through a plain store, as gemm_generic.cpp's tile)
template <int P>
ETNP_SLP_ONLY void block(const float* const* rows, const int64_t* wrow, int64_t ntaps, int64_t xstep, const float* wd,
                         int64_t c0, float* out) {
  float acc[P][CB] = {};
  for (int64_t t = 0; t < ntaps; t++) {
    float wk[CB];
    for (int l = 0; l < CB; l++) wk[l] = wd[wrow[t] + c0 + l];
    for (int p = 0; p < P; p++) {
      const float* xp = rows[t] + p * xstep + c0;
      for (int l = 0; l < CB; l++) acc[p][l] += xp[l] * wk[l];
    }
  }
  for (int p = 0; p < P; p++)
    for (int l = 0; l < CB; l++) out[p * CB + l] = acc[p][l];
}

// P output pixels (pixel p's tap t at rows[t] + p * xstep) into r (P x C results, a pixel's C
// together): per block of 8 channels, the taps' products summed, then scale, bias and clamp.
template <int P>
void pixels(const float* const* rows, const int64_t* wrow, int64_t ntaps, int64_t xstep, const float* wd,
            int64_t C, const float* s, const float* b, const int32_t* bq, float lo, float hi, float* r) {
  for (int64_t c0 = 0; c0 < C; c0 += CB) {
    float acc[P * CB];
    block<P>(rows, wrow, ntaps, xstep, wd, c0, acc);
    const int64_t cols = std::min<int64_t>(CB, C - c0);
    if (bq)  // (as the other paths: the exact integer sum plus the integer bias, rounded once)
      for (int p = 0; p < P; p++)
        for (int64_t l = 0; l < cols; l++) acc[p * CB + l] = (float)((int32_t)acc[p * CB + l] + bq[c0 + l]);
    for (int p = 0; p < P; p++)
      for (int64_t l = 0; l < cols; l++) r[p * C + c0 + l] = clamp_f32(acc[p * CB + l] * s[c0 + l] + b[c0 + l], lo, hi);
  }
}

}  // namespace

void depthwise_q8_generic(const DepthwiseGeom& g, const DwQ8Input& x, const PackedDwQ8& w, const float* bias,
                          const QOutput& out, int64_t row_begin, int64_t row_end) {
  const int64_t C = g.C, ldw = (C + 15) / 16 * 16, xstep = g.sw * C;
  const float pz = (float)x.pad_code;
  ETNP_THREAD_LOCAL(RowCache, cache);
  ETNP_THREAD_LOCAL(std::vector<float>, sb);
  ETNP_THREAD_LOCAL(std::vector<float>, res);
  ETNP_THREAD_LOCAL(std::vector<const float*>, trow);
  ETNP_THREAD_LOCAL(std::vector<int64_t>, twrow);
  ETNP_THREAD_LOCAL(std::vector<int64_t>, need);
  ETNP_THREAD_LOCAL(std::vector<const float*>, vrow);
  cache.reset(g.KH, g.W * C);
  sb.resize((size_t)(2 * ldw));
  res.resize((size_t)(g.OW * C));
  trow.resize((size_t)(g.KH * g.KW));
  twrow.resize((size_t)(g.KH * g.KW));
  need.resize((size_t)g.KH);
  vrow.resize((size_t)g.KH);
  float* s = sb.data();
  float* b = s + ldw;
  const int32_t* bq = w.bias_q.empty() ? nullptr : w.bias_q.data();
  for (int64_t c = 0; c < ldw; c++) {  // (as the other paths: sx * sw[c], the bias or 0)
    s[c] = x.scale * w.scale[(size_t)c];
    b[c] = bias && c < C ? bias[c] : 0.f;
  }
  for (int64_t r = row_begin; r < row_end; r++) {
    const int64_t bn = r / g.OH, oh = r % g.OH;
    for (int64_t i = 0; i < g.KH; i++) {
      const int64_t ih = oh * g.sh - g.pad_top + i * g.dh;
      need[(size_t)i] = ih >= 0 && ih < g.H ? bn * g.H + ih : -1;
    }
    for (int64_t i = 0; i < g.KH; i++)
      vrow[(size_t)i] = need[(size_t)i] < 0 ? nullptr
                                            : cache.get(need[(size_t)i], x.codes + need[(size_t)i] * g.W * C, pz,
                                                        need.data(), g.KH);
    for (int64_t ow = 0; ow < g.OW;) {
      const int64_t iw0 = ow * g.sw - g.pad_left;
      int64_t n = 0;
      if (ow + kPixels <= g.OW && iw0 >= 0 && iw0 + (kPixels - 1) * g.sw + (g.KW - 1) * g.dw < g.W) {
        for (int64_t i = 0; i < g.KH; i++)
          for (int64_t j = 0; vrow[(size_t)i] && j < g.KW; j++, n++) {
            trow[(size_t)n] = vrow[(size_t)i] + (iw0 + j * g.dw) * C;
            twrow[(size_t)n] = (i * g.KW + j) * ldw;
          }
        pixels<kPixels>(trow.data(), twrow.data(), n, xstep, w.w.data(), C, s, b, bq, g.lo, g.hi, res.data() + ow * C);
        ow += kPixels;
      } else {  // one pixel, the taps inside the width
        for (int64_t i = 0; i < g.KH; i++)
          for (int64_t j = 0; vrow[(size_t)i] && j < g.KW; j++) {
            const int64_t iw = iw0 + j * g.dw;
            if (iw < 0 || iw >= g.W) continue;
            trow[(size_t)n] = vrow[(size_t)i] + iw * C;
            twrow[(size_t)n++] = (i * g.KW + j) * ldw;
          }
        pixels<1>(trow.data(), twrow.data(), n, 0, w.w.data(), C, s, b, bq, g.lo, g.hi, res.data() + ow * C);
        ow++;
      }
    }
    if (out.ldc == C) {
      store_q8_row(out, r * g.OW * C, res.data(), g.OW * C);
    } else {
      for (int64_t ow = 0; ow < g.OW; ow++) store_q8_row(out, (r * g.OW + ow) * out.ldc, res.data() + ow * C, C);
    }
  }
}

}  // namespace etnp
