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
// Where the result is wanted NCHW (a Conv1d between NCHW-layout nodes: Node::nchw_output), the
// tiles' channel rows are stored as they are, with the residual adds and unary functions fused
// after the convolution applied on the way (conv2d_nchw_output).
#include <algorithm>
#include <cstring>

#include "delegates/xnnpack/xnn_conv_rows.h"
#include "delegates/xnnpack/xnn_node_util.h"
#include "kernels/compute/conv1d_rows.h"
#include "kernels/compute/gemm.h"
#include "kernels/compute/transpose_f32.h"
#include "kernels/compute/winograd1d_f32.h"
#include "os/thread_slot.h"

namespace etnp::xnn {

constexpr int64_t kGroupWeightBytes = int64_t(512) << 10;
constexpr int64_t kChunkWindowBytes = int64_t(16) << 10;
constexpr int64_t kDirectWeightBytes = int64_t(32) << 10;  // an 8-channel block's weight lines, kept in L1

// Whether the direct kernel is the cheaper way to a 1-D convolution's rows of OW positions x OC
// channels, against the GEMM over the input's NHWC copy (conv_indirect in xnn_conv.cpp): the
// direct kernel broadcasts its weights, K cache lines an 8-channel block, for every tile, and where
// they stay in L1 it runs ~10% above the GEMM (1 thread, CPU time: Conv1d(32, 32, 11) on 25600
// samples 0.85 of the GEMM's time, (64, 64, 7) 0.92, (128, 128, 3) 0.91, (80, 384, 3) 0.86);
// beyond L1 it falls behind ((256, 256, 11): 1.24x the GEMM, (512, 512, 7): 1.37x; Inception's 1x7
// convolution of 128 channels on 17x17, 2.6x). It also computes whole 16-position vectors of a
// row (a 17-wide row as 32) where the GEMM pads the channels to its 16-column panels: beyond a
// third more multiply-adds than the GEMM's it declines too (a guard, not measured on its own: the
// GEMM path adds the input's NHWC copy and, for a fused NCHW result, the passes of what was fused).
namespace {
bool direct_beats_gemm(int64_t K, int64_t OW, int64_t OC) {
  if (K * 64 > kDirectWeightBytes) return false;
  const int64_t computed = (OW + 15) / 16 * 16 * OC, gemm = OW * ((OC + 15) / 16 * 16);
  return computed * 3 <= gemm * 4;
}
}  // namespace

bool conv_nchw_rows(KernelContext& ctx, const Node& n, const Value& a, int64_t N, int64_t H, int64_t W, int64_t C,
                    int64_t OH, int64_t OW, const GemmEpilogue& ep, float* Y, int64_t OC, const NchwStore* nchw) {
  if (!conv1d_rows_available() || n.groups != 1 || n.packed.size() != 1 || OC % 8 || ep.bias_row || ep.accumulate ||
      N * OH * OW == 0)
    return false;
  // along W (a kernel row: rows of the image are separate signals), or along H where the image is one
  // column wide (a Conv1d exported as [N, C, L, 1]: the same signal, each plane L adjacent floats)
  const bool along_w = n.kh == 1 && n.sh == 1 && !n.pad_top && !n.pad_bottom && OH == H;
  const bool along_h = W == 1 && OW == 1 && n.kw == 1 && n.sw == 1 && !n.pad_left && !n.pad_right;
  if (!(along_w || along_h) || (along_w ? n.sw : n.sh) != 1) return false;
  const PackedB& B = n.packed[0];
  if (B.data.empty()) return false;  // (float16 panels: the GEMM paths widen them)
  const int64_t KW = along_w ? n.kw : n.kh, dw = along_w ? n.dw : n.dh, pl = along_w ? n.pad_left : n.pad_top;
  const int64_t span = (KW - 1) * dw;
  if (B.K != KW * C || B.N != OC) return false;
  if (!along_w) {  // one row of H positions
    W = H;
    OW = OH;
    H = OH = 1;
  }
  const int64_t plane = H * W, rows = N * OH, vecs = (OW + 15) / 16, ocb = OC / 8;
  if (!direct_beats_gemm(B.K, OW, OC)) return false;
  const int64_t oplane = OH * OW;  // (an NCHW output's channel plane)
  const float* X = a.cdata();
  const bool cm = nchw != nullptr;
  const UnaryOp* act = cm && nchw->act ? unary_op(nchw->act) : nullptr;
  if (cm && nchw->act && !act) return false;
  const bool leaky = cm && nchw->act == LeakyReLU;  // (in the kernel; another function after each tile)
  const UnaryOp* act2 = cm && nchw->y2 ? unary_op(nchw->act2) : nullptr;
  if (cm && nchw->y2 && !act2) return false;
  const bool leaky2 = act2 && nchw->act2 == LeakyReLU;
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
    ETNP_THREAD_LOCAL(FloatBuffer, win);  // grow only
    ETNP_THREAD_LOCAL(FloatBuffer, out);
    ETNP_THREAD_LOCAL(FloatBuffer, sums);
    if (cc < C && sums.size() < (size_t)(ocb * 384)) sums.resize((size_t)(ocb * 384));
    for (int64_t task = tb; task < te; task++) {
      const int64_t r = task / (parts * groups), grp = task / parts % groups, part = task % parts;
      const int64_t bn = r / OH, oh = r % OH;
      const int64_t v0 = vecs * part / parts, v1 = vecs * (part + 1) / parts;
      const int64_t b0 = ocb * grp / groups, b1 = ocb * (grp + 1) / groups;
      const float* xrow = X + bn * C * plane + oh * W;  // channel 0's input row
      // position 0 of the output row: channel 0's (NCHW) or its pixel's (NHWC)
      float* yrow = cm ? Y + bn * OC * oplane + oh * OW : Y + (bn * OH + oh) * OW * OC;
      const float* rrow[2];  // the residuals' output row
      for (int k = 0; k < 2; k++) rrow[k] = cm && nchw->res[k] ? nchw->res[k] + bn * OC * oplane + oh * OW : nullptr;
      float* y2row = act2 ? nchw->y2 + bn * OC * oplane + oh * OW : nullptr;
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
        t.channel_major = cm;
        if (inside) {
          t.x = xrow + in0;
          t.xs = plane;
          t.y = cm ? yrow + p0 : yrow + p0 * OC;
          t.ldy = cm ? oplane : OC;
          for (int k = 0; k < 2 && rrow[k]; k++) {
            t.res[k] = rrow[k] + p0;
            t.ldr = oplane;
            t.res_lo[k] = nchw->res_lo[k];
            t.res_hi[k] = nchw->res_hi[k];
          }
          t.leaky = leaky;
          t.slope = nchw ? nchw->act_param : 0.f;
          if (leaky2) {
            t.y2 = y2row + p0;
            t.slope2 = nchw->act2_param;
          }
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
          t.ldy = cm ? 48 : OC;  // (NCHW: a row of 48 positions a channel)
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
            tb8.y = cm ? t.y + b * 8 * t.ldy : t.y + b * 8;
            for (int k = 0; k < 2; k++)
              if (t.res[k]) tb8.res[k] = t.res[k] + b * 8 * t.ldr;
            if (t.y2) tb8.y2 = t.y2 + b * 8 * t.ldy;
            tb8.init = c0 > 0 ? sums.data() + (b - b0) * 384 : nullptr;
            tb8.partial = c0 + cn < C ? sums.data() + (b - b0) * 384 : nullptr;
            conv1d_rows_tile(tb8, pv);
          }
        }
        if (cm) {  // NCHW: the ragged tile's rows copied out, its residual and function where the kernel did not
          for (int64_t c = b0 * 8; c < b1 * 8; c++) {
            float* yc = yrow + c * oplane + p0;
            if (!inside) {
              std::memcpy(yc, out.data() + c * 48, (size_t)count * 4);
              for (int k = 0; k < 2 && rrow[k]; k++)
                for (int64_t p = 0; p < count; p++)  // (NaN stays)
                  yc[p] = std::min(std::max(yc[p] + rrow[k][c * oplane + p0 + p], nchw->res_lo[k]), nchw->res_hi[k]);
            }
            if (act && (!inside || !leaky)) act->f(yc, yc, count, nchw->act_param);
            if (act2 && (!inside || !leaky2)) act2->f(yc, y2row + c * oplane + p0, count, nchw->act2_param);
          }
        } else if (!inside) {
          for (int64_t p = 0; p < count; p++)
            std::memcpy(yrow + (p0 + p) * OC + b0 * 8, out.data() + p * OC + b0 * 8, (size_t)((b1 - b0) * 8) * 4);
        }
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

bool nchw_rows_candidate(const Node& n, const std::vector<int64_t>& in) {
  if (!conv1d_rows_available() || n.type != Conv2d || n.groups != 1 || n.packed.size() != 1 || n.packed[0].data.empty() ||
      n.packed[0].N % 8 || !n.qconv.empty() || in.size() != 4)
    return false;
  const bool along_w = n.kh == 1 && n.sh == 1 && !n.pad_top && !n.pad_bottom && n.sw == 1 && (n.kw > 1 || n.pad_left || n.pad_right);
  const bool along_h = in[3] == 1 && n.kw == 1 && n.sw == 1 && !n.pad_left && !n.pad_right && n.sh == 1 &&
                       (n.kh > 1 || n.pad_top || n.pad_bottom);
  if (!(along_w || along_h)) return false;
  // the positions along the signal (unknown, <= 0: left to the run)
  const int64_t len = along_w ? in[3] : in[2], pad = along_w ? (int64_t)n.pad_left + n.pad_right : (int64_t)n.pad_top + n.pad_bottom;
  const int64_t span = along_w ? ((int64_t)n.kw - 1) * n.dw : ((int64_t)n.kh - 1) * n.dh;
  const int64_t OW = len + pad - span;
  return OW <= 0 || direct_beats_gemm(n.packed[0].K, OW, n.packed[0].N);
}

namespace {

// A 1-D Winograd node's NCHW result (Node::winograd1d): the NCHW input read in place, each block
// of output positions transposed into the NCHW result as it finishes and completed there (the
// residuals, the function, the second result) while it is in cache - no NHWC copy of the input or
// of the result is made.
struct Winograd1dNchwFinish {
  float* y;  // the NCHW result: sequences of OC rows of OL
  float* y2;
  int64_t OL, OC;
  const float* res[2];
  float lo[2], hi[2];
  const UnaryOp *f, *f2;
  float param, param2;
  void rows(int64_t n, int64_t o0, int64_t o1, const float* block) const {  // block: o1 - o0 rows of OC
    const int64_t len = o1 - o0;
    transpose_strided_f32(block, len, OC, OC, y + n * OC * OL + o0, OL);
    for (int64_t oc = 0; oc < OC; oc++) {
      const int64_t at = (n * OC + oc) * OL + o0;
      float* s = y + at;
      for (int k = 0; k < 2 && res[k]; k++) {
        const float* r = res[k] + at;
        for (int64_t i = 0; i < len; i++) s[i] = std::min(std::max(s[i] + r[i], lo[k]), hi[k]);  // (NaN stays)
      }
      if (f) f->f(s, s, len, param);
      if (f2) f2->f(s, y2 + at, len, param2);
    }
  }
};

void winograd1d_nchw_output(KernelContext& ctx, Graph& g, Node& n, const Value& a, Value& o, Value* o2,
                            const Value* const r[2], const float lo[2], const float hi[2]) {
  const int64_t N = a.shape[0], C = a.shape[1], H = a.shape[2], W = a.shape[3];
  const int64_t OC = o.shape[1], OH = o.shape[2], OW = o.shape[3];
  Winograd1dNchwFinish fin{o.data.data(), o2 ? o2->data.data() : nullptr, OH * OW, OC,
                           {r[0] ? r[0]->cdata() : nullptr, r[1] ? r[1]->cdata() : nullptr}, {lo[0], lo[1]}, {hi[0], hi[1]},
                           n.act ? unary_op(n.act) : nullptr, o2 ? unary_op(n.act2) : nullptr, n.act_param, n.act2_param};
  if ((n.act && !fin.f) || (o2 && !fin.f2)) fail(n, "a fused function of unknown type");
  if (!fin.res[0]) fin.res[0] = fin.res[1], fin.lo[0] = fin.lo[1], fin.hi[0] = fin.hi[1], fin.res[1] = nullptr;
  Winograd1dSink sink;
  sink.fn = [](void* c, int64_t seq, int64_t o0, int64_t o1, const float* rows) {
    static_cast<const Winograd1dNchwFinish*>(c)->rows(seq, o0, o1, rows);
  };
  sink.ctx = &fin;
  run_winograd1d(ctx, n, a.cdata(), true, N, H, W, C, OH, OW, nullptr, epilogue(n, bias_of(g, n, OC)), &sink);
}

}  // namespace

void conv2d_nchw_output(KernelContext& ctx, Graph& g, Node& n, Scratch& sc) {
  const Value& a = in(g, n, 0);  // NCHW
  Value& o = out(g, n);
  if (a.shape.size() != 4) fail(n, "expects a 4-D NCHW input");
  if (n.inputs[0] == n.output || n.nchw_output == n.output || n.nchw_output == n.inputs[0])
    fail(n, "reads and writes one value");
  const int64_t N = a.shape[0], C = a.shape[1], H = a.shape[2], W = a.shape[3], OC = (int64_t)n.groups * n.group_out;
  const int64_t OH = pool_dim(n, H, n.kh, n.sh, n.dh, n.pad_top, n.pad_bottom);
  const int64_t OW = pool_dim(n, W, n.kw, n.sw, n.dw, n.pad_left, n.pad_right);
  const int64_t total = N * OC * OH * OW;
  // the residuals' elements are the result's, in its order (fused only where their shapes were one)
  const Value* r[2] = {n.residual != kInvalidId ? &in(g, n, 3) : nullptr, n.residual2 != kInvalidId ? &in(g, n, 4) : nullptr};
  const float lo[2] = {n.res_min, n.res2_min}, hi[2] = {n.res_max, n.res2_max};
  for (const Value* v : r)
    if (v && (v->numel() != total || v->shape != v->dims))
      fail(n, "a fused residual of shape " + shape_str(v->shape) + " for a result of " + std::to_string(total) + " elements");
  ensure_shape(o, {N, OC, OH, OW});
  // a second result (Node::act2): the function of this one, of the shape the graph gives it
  Value* o2 = n.act2 && n.output2 != kInvalidId ? &g.values[n.output2] : nullptr;
  if (o2) {
    if (n.output2 == n.output || n.output2 == n.inputs[0] || n.output2 == n.residual || n.output2 == n.residual2)
      fail(n, "reads and writes one value");
    ensure_shape(*o2, o2->dims);
    if (o2->numel() != total) fail(n, "a fused second result of shape " + shape_str(o2->dims) + " for a result of " + std::to_string(total) + " elements");
  }
  if (total == 0) return;
  if (n.winograd1d) return winograd1d_nchw_output(ctx, g, n, a, o, o2, r, lo, hi);  // (its filters: no other path's)
  if (fusion_mode() != FusionMode::Steps && C == n.group_in && n.inputs.size() > 1) {
    GemmEpilogue ep = epilogue(n, bias_of(g, n, OC));
    NchwStore st;
    for (int k = 0; k < 2; k++) {
      st.res[k] = r[k] ? r[k]->cdata() : nullptr;
      st.res_lo[k] = lo[k];
      st.res_hi[k] = hi[k];
    }
    st.act = n.act;
    st.act_param = n.act_param;
    if (o2) {
      st.y2 = o2->data.data();
      st.act2 = n.act2;
      st.act2_param = n.act2_param;
    }
    if (conv_nchw_rows(ctx, n, a, N, H, W, C, OH, OW, ep, o.data.data(), OC, &st)) return;
  }
  // step by step: the NHWC convolution (the node without what was fused after it), the transpose,
  // the residual add and the function
  {
    struct Restore {
      Node& n;
      uint32_t output, nchw_output, residual, residual2;
      int act;
      ChainHook* then;
      ~Restore() {
        n.output = output;
        n.nchw_output = nchw_output;
        n.residual = residual;
        n.residual2 = residual2;
        n.act = act;
        n.then = then;
      }
    } restore{n, n.output, n.nchw_output, n.residual, n.residual2, n.act, n.then};
    n.output = n.nchw_output;
    n.nchw_output = n.residual = n.residual2 = kInvalidId;
    n.act = 0;
    n.then = nullptr;  // (a chain after the node reads the NCHW result, run by the executor)
    conv2d(ctx, g, n, sc);
  }
  const Value& u = g.values[n.nchw_output];
  if (u.numel() != total || !transpose_as_batched_2d(ctx, u, {0, 3, 1, 2}, o)) fail(n, "cannot transpose the NHWC result");
  float* y = o.data.data();
  const float* rp[2] = {r[0] ? r[0]->cdata() : nullptr, r[1] ? r[1]->cdata() : nullptr};
  const UnaryOp* f = n.act ? unary_op(n.act) : nullptr;
  const UnaryOp* f2 = o2 ? unary_op(n.act2) : nullptr;
  if ((n.act && !f) || (o2 && !f2)) fail(n, "a fused function of unknown type");
  parallel(ctx, total, int64_t(1) << 16, [&](int64_t b, int64_t e) {
    for (int k = 0; k < 2 && rp[k]; k++)
      for (int64_t i = b; i < e; i++) y[i] = std::min(std::max(y[i] + rp[k][i], lo[k]), hi[k]);  // (NaN stays)
    if (f) f->f(y + b, y + b, e - b, n.act_param);
    if (f2) f2->f(y + b, o2->data.data() + b, e - b, n.act2_param);
  });
}

}  // namespace etnp::xnn
