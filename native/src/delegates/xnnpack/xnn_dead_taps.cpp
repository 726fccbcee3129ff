// Convolution taps that read only padding (lower_dead_taps, xnn_ops.h).
#include "delegates/xnnpack/xnn_node_util.h"
#include "delegates/xnnpack/xnn_ops.h"

namespace etnp::xnn {

namespace {

// The first and last of k taps (spacing d) that read inside an input of `in` pixels for some of
// the `out` output pixels (stride s, padding p before); false where none does.
bool live_taps(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t p, int64_t& first, int64_t& last) {
  first = -1, last = -1;
  for (int64_t i = 0; i < k; i++) {
    // output o reads input o * s - p + i * d: inside [0, in) for some o in [0, out)?
    const int64_t lo = i * d - p, hi = (out - 1) * s + i * d - p;  // the first and last pixel it reads
    bool live = hi >= 0 && lo < in;
    if (live && s > 1) {  // (strided: some o * s + lo in [0, in))
      const int64_t o = lo >= 0 ? 0 : (-lo + s - 1) / s;
      live = o < out && o * s + lo < in;
    }
    if (!live) continue;
    if (first < 0) first = i;
    last = i;
  }
  return first >= 0;
}

}  // namespace

void lower_dead_taps(Graph& g) {
  const std::vector<int> uses = count_readers(g);
  for (Node& n : g.nodes) {
    if (n.type != Conv2d || n.filter_flipped || n.filter_taps_major || n.filter_kh || n.sh < 1 || n.sw < 1 ||
        n.dh < 1 || n.dw < 1 || !own_float_filter(g, n, uses))
      continue;
    const Value& x = g.values[n.inputs[0]];
    if (x.dims.size() != 4) continue;
    const int64_t H = x.dims[1], W = x.dims[2], KH = n.kh, KW = n.kw;
    // (sizes any real graph has: the arithmetic below stays far from overflow, the loops short)
    if (H > (int64_t(1) << 24) || W > (int64_t(1) << 24) || KH > 1024 || KW > 1024 || n.sh > 65536 || n.sw > 65536 ||
        n.dh > 65536 || n.dw > 65536)
      continue;
    const int64_t span_h = H + n.pad_top + n.pad_bottom - n.dh * (KH - 1) - 1;
    const int64_t span_w = W + n.pad_left + n.pad_right - n.dw * (KW - 1) - 1;
    if (H <= 0 || W <= 0 || span_h < 0 || span_w < 0) continue;  // (no output: the node fails when it runs)
    const int64_t OH = span_h / n.sh + 1, OW = span_w / n.sw + 1;
    int64_t r0, r1, c0, c1;
    if (!live_taps(H, OH, KH, n.sh, n.dh, n.pad_top, r0, r1) || !live_taps(W, OW, KW, n.sw, n.dw, n.pad_left, c0, c1))
      continue;  // (no tap reads the image: left to the paths as it is)
    if (r0 == 0 && r1 == KH - 1 && c0 == 0 && c1 == KW - 1) continue;
    // the padding the taps kept see: the same output size (pad_top - r0 * dh >= 0: a tap above
    // the image for every output pixel lies within the top padding)
    const int64_t pt = n.pad_top - r0 * n.dh, pb = n.pad_bottom - (KH - 1 - r1) * n.dh;
    const int64_t pl = n.pad_left - c0 * n.dw, pr = n.pad_right - (KW - 1 - c1) * n.dw;
    if (pt < 0 || pb < 0 || pl < 0 || pr < 0) continue;
    n.filter_kh = (uint32_t)KH, n.filter_kw = (uint32_t)KW, n.tap_row0 = (uint32_t)r0, n.tap_col0 = (uint32_t)c0;
    n.kh = (uint32_t)(r1 - r0 + 1), n.kw = (uint32_t)(c1 - c0 + 1);
    n.pad_top = (uint32_t)pt, n.pad_bottom = (uint32_t)pb, n.pad_left = (uint32_t)pl, n.pad_right = (uint32_t)pr;
    n.planned_h = H, n.planned_w = W;
  }
}

}  // namespace etnp::xnn
