// A 1-D convolution reading an NCHW input in place (a fused input transpose): a kernel of one row
// (each output row a 1-D convolution of its input row's channel planes) or of one column over an
// image one column wide (how a Conv1d is exported: [N, C, L, 1]), run by conv1d_rows_tile
// (kernels/compute/conv1d_rows.h) on tiles of 8 output channels x up to 48 positions read straight
// from the planes. Tiles whose window crosses the padding (or that end the row ragged) read a small
// zero-padded copy of their window instead. Work is split along the row (a long signal) and, where
// the rows are short, across the output channels too, so that every thread gets an even share; the
// channels are also cut into groups whose weights stay in the per-core cache (each group's tiles
// sweep their part of the row in turn), and many input channels are summed in chunks whose
// window stays in L1 (the partial sums wait in a small buffer).
#include <algorithm>
#include <cstring>

#include "delegates/xnnpack/xnn_ops.h"
#include "delegates/xnnpack/xnn_conv_rows.h"
#include "kernels/compute/conv1d_rows.h"
#include "kernels/compute/gemm.h"

namespace etnp::xnn {

constexpr int64_t kGroupWeightBytes = int64_t(512) << 10;
constexpr int64_t kChunkWindowBytes = int64_t(16) << 10;

bool conv_nchw_rows(KernelContext& ctx, const Node& n, const Value& a, int64_t N, int64_t H, int64_t W, int64_t C,
                    int64_t OH, int64_t OW, const GemmEpilogue& ep, float* Y, int64_t OC) {
  if (!conv1d_rows_available() || n.groups != 1 || n.packed.size() != 1 || OC % 8 || ep.bias_row || ep.accumulate ||
      N * OH * OW == 0)
    return false;
  // along W (a kernel row: rows of the image are separate signals), or along H where the image is one
  // column wide (a Conv1d exported as [N, C, L, 1]: the same signal, each plane L adjacent floats)
  const bool along_w = n.kh == 1 && n.sh == 1 && !n.pad_top && !n.pad_bottom && OH == H;
  const bool along_h = W == 1 && OW == 1 && n.kw == 1 && n.sw == 1 && !n.pad_left && !n.pad_right;
  if (!(along_w || along_h) || (along_w ? n.sw : n.sh) != 1) return false;
  const PackedB& B = n.packed[0];
  const int64_t KW = along_w ? n.kw : n.kh, dw = along_w ? n.dw : n.dh, pl = along_w ? n.pad_left : n.pad_top;
  const int64_t span = (KW - 1) * dw;
  if (B.K != KW * C || B.N != OC) return false;
  if (!along_w) {  // one row of H positions
    W = H;
    OW = OH;
    H = OH = 1;
  }
  const int64_t plane = H * W, rows = N * OH, vecs = (OW + 15) / 16, ocb = OC / 8;
  const float* X = a.cdata();
  // tasks: rows x parts of a row (runs of 16-position vectors) x groups of 8-channel blocks
  const int nt = ctx.pool ? ctx.pool->num_threads() : 1;
  const int64_t want = nt > 1 ? 8 * nt : 1;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(vecs / 3, (want + rows - 1) / rows));
  // a group's weights (the cache lines its tiles' broadcasts touch: 64 bytes a row of K) stay in
  // the per-core cache while its tiles sweep the row: Conv1d(256, 256, 11) has 2.9 MB of them
  const int64_t fit = std::max<int64_t>(1, kGroupWeightBytes / (B.K * 64));
  const int64_t groups = std::min<int64_t>(
      ocb, std::max<int64_t>((ocb + fit - 1) / fit, (want + rows * parts - 1) / (rows * parts)));
  const int64_t tasks = rows * parts * groups;
  const int64_t wstride = 48 + span;  // a padded window's row
  // channels a chunk: a tile's window of them stays in L1 while the group's channel blocks read it
  const int64_t cc = std::min<int64_t>(C, std::max<int64_t>(8, kChunkWindowBytes / (wstride * 4)));
  parallel(ctx, tasks, 1, [&](int64_t tb, int64_t te) {
    thread_local FloatBuffer win, out, sums;  // grow only
    if (cc < C && sums.size() < (size_t)(ocb * 384)) sums.resize((size_t)(ocb * 384));
    for (int64_t task = tb; task < te; task++) {
      const int64_t r = task / (parts * groups), grp = task / parts % groups, part = task % parts;
      const int64_t bn = r / OH, oh = r % OH;
      const int64_t v0 = vecs * part / parts, v1 = vecs * (part + 1) / parts;
      const int64_t b0 = ocb * grp / groups, b1 = ocb * (grp + 1) / groups;
      const float* xrow = X + bn * C * plane + oh * W;  // channel 0's input row
      float* yrow = Y + (bn * OH + oh) * OW * OC;
      for (int64_t v = v0; v < v1;) {
        const int pv = (int)std::min<int64_t>(3, v1 - v);
        const int64_t p0 = v * 16, count = std::min<int64_t>(16 * pv, OW - p0), in0 = p0 - pl;
        Conv1dRowsTile t;
        t.C = C;
        t.KW = KW;
        t.dw = dw;
        t.K = B.K;
        t.lo = ep.min;
        t.hi = ep.max;
        const bool inside = count == 16 * pv && in0 >= 0 && in0 + 16 * pv - 1 + span < W;
        if (inside) {
          t.x = xrow + in0;
          t.xs = plane;
          t.y = yrow + p0 * OC;
          t.ldy = OC;
        } else {  // the window, zero-padded, and a local output tile (copied out below)
          if (win.size() < (size_t)(C * wstride)) win.resize((size_t)(C * wstride));
          if (out.size() < (size_t)(48 * OC)) out.resize((size_t)(48 * OC));
          const int64_t len = 16 * pv + span;
          for (int64_t c = 0; c < C; c++) {
            float* d = win.data() + c * wstride;
            const float* s = xrow + c * plane;
            for (int64_t q = 0; q < len; q++) {
              const int64_t iw = in0 + q;
              d[q] = iw >= 0 && iw < W ? s[iw] : 0.f;
            }
          }
          t.x = win.data();
          t.xs = wstride;
          t.y = out.data();
          t.ldy = OC;
        }
        for (int64_t c0 = 0; c0 < C; c0 += cc) {  // channel chunks, partial sums in `sums` between them
          const int64_t cn = std::min(cc, C - c0);
          for (int64_t b = b0; b < b1; b++) {
            Conv1dRowsTile tb8 = t;
            tb8.x = t.x + c0 * t.xs;
            tb8.C = cn;
            tb8.Cw = C;
            tb8.wpanel = B.data.data() + (b / 2) * 16 * B.K + (b % 2) * 8 + c0 * 16;
            tb8.bias = ep.bias_col ? ep.bias_col + b * 8 : nullptr;
            tb8.y = t.y + b * 8;
            tb8.init = c0 > 0 ? sums.data() + (b - b0) * 384 : nullptr;
            tb8.partial = c0 + cn < C ? sums.data() + (b - b0) * 384 : nullptr;
            conv1d_rows_tile(tb8, pv);
          }
        }
        if (!inside)
          for (int64_t p = 0; p < count; p++)
            std::memcpy(yrow + (p0 + p) * OC + b0 * 8, out.data() + p * OC + b0 * 8, (size_t)((b1 - b0) * 8) * 4);
        if (ep.residual) {  // the fused add, on the tile's rows and channels just written
          const int64_t m0 = (bn * OH + oh) * OW + p0;
          for (int64_t p = 0; p < count; p++) {
            float* yp = Y + (m0 + p) * OC;
            const float* rp = ep.residual + (m0 + p) * ep.ldr;
            for (int64_t c = b0 * 8; c < b1 * 8; c++)
              yp[c] = std::min(ep.res_max, std::max(ep.res_min, yp[c] + rp[c]));
          }
        }
        v += pv;
      }
    }
  });
  return true;
}

}  // namespace etnp::xnn
