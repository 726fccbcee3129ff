// A depthwise convolution with the pointwise convolutions around it fused at load (xnn_fuse.cpp):
// the expansion before it (Node::pre), the projection after it (Node::post), either or both, run
// in bands of rows. Each thread takes a contiguous share of the depthwise output rows and walks
// down it: it computes the expanded rows the next few output rows need into its own window
// buffer (a GEMM on those input rows), then those depthwise rows into a small buffer, then
// projects them (a GEMM, with the residual add when one was fused) into the output. The large
// intermediate images are never written whole: their rows are made, read and dropped in cache.
// Expanded rows are computed once, except the few (kernel height - 1) at the top of each share.
#include <algorithm>
#include <cstring>

#include "delegates/xnnpack/xnn_ops.h"
#include "kernels/compute/depthwise.h"
#include "kernels/compute/gemm.h"
#include "kernels/kernel_util.h"
#include "os/thread_slot.h"

namespace etnp::xnn {
namespace {

constexpr int64_t kMinRowsPerShare = 8;
constexpr int64_t kWindowBytes = int64_t(128) << 10;  // expanded rows kept per thread (128-512 KiB measured alike)

}  // namespace

bool band_pipeline(KernelContext& ctx, Graph& g, Node& n) {
  if (fusion_mode() == FusionMode::Steps) return false;
  const Value& w = g.values[n.inputs[1]];
  const Value& src = g.values[n.pre ? n.pre->inputs[0] : n.inputs[0]];  // the pipeline's input
  if (src.shape.size() != 4 || w.shape.size() != 4 || w.shape[0] != 1 || w.shape[1] != (int64_t)n.kh ||
      w.shape[2] != (int64_t)n.kw)
    return false;  // the separate steps report what is wrong
  const int64_t N = src.shape[0], H = src.shape[1], W = src.shape[2], C = w.shape[3];
  const PackedB* pw = n.pre ? &n.pre->packed[0] : nullptr;
  const PackedB* pp = n.post ? &n.post->packed[0] : nullptr;
  if (pw ? (src.shape[3] != pw->K || pw->N != C) : src.shape[3] != C) return false;  // multiplier 1
  if (pp && pp->K != C) return false;
  const int64_t Cin = src.shape[3], KH = n.kh, KW = n.kw;
  const int64_t OH = pool_dim(n, H, KH, n.sh, n.dh, n.pad_top, n.pad_bottom);
  const int64_t OW = pool_dim(n, W, KW, n.sw, n.dw, n.pad_left, n.pad_right);
  const int64_t OC = pp ? pp->N : C;
  const std::vector<int64_t> oshape{N, OH, OW, OC};
  const Value* res = n.post && n.post->residual != kInvalidId ? &g.values[n.post->residual] : nullptr;
  if (res && res->shape != oshape) return false;
  Value& o = g.values[n.output];
  ensure_shape(o, oshape);
  if (N == 0 || H == 0 || W == 0 || C == 0 || OC == 0) return true;
  const GemmEpilogue ep_pre = n.pre ? epilogue(*n.pre, bias_of(g, *n.pre, C)) : GemmEpilogue();
  GemmEpilogue ep_post = n.post ? epilogue(*n.post, bias_of(g, *n.post, OC)) : GemmEpilogue();
  if (n.post) with_residual(ep_post, *n.post, res, 0, OC);
  const float* bias = bias_of(g, n, C);
  // static int8 graphs: the expanded rows and the depthwise rows snap to their values' grids, as
  // the steps' finalize_value does (the projection's output is snapped by run_node)
  const Value* e_grid = n.pre && on_int8_grid(g.values[n.inputs[0]]) ? &g.values[n.inputs[0]] : nullptr;
  const Value* d_grid = n.post && on_int8_grid(g.values[n.post->inputs[0]]) ? &g.values[n.post->inputs[0]] : nullptr;
  const float* wd = w.data.data();
  const float* X = src.cdata();
  float* Y = o.data.data();
  const int64_t row = W * C;                               // floats in one expanded row
  const int64_t span = (KH - 1) * (int64_t)n.dh + 1;       // input rows one output row reads
  const int64_t cap = std::max<int64_t>(span + n.sh, kWindowBytes / (row * 4));  // window rows
  int64_t batch = std::max<int64_t>(1, (cap - span) / (int64_t)n.sh + 1);       // output rows a step
  if (!pw) batch = std::max<int64_t>(1, kWindowBytes / (OW * C * 4));          // (no window: D rows bound it)
  const int nt = ctx.pool ? ctx.pool->num_threads() : 1;
  const int64_t total = N * OH, parts = std::min<int64_t>(nt, total);
  // each share recomputes the expanded rows above it: on short images (MobileNetV2's 14x14 and
  // 7x7 blocks at 2 threads) that costs more than the steps' finer splits
  if (pw && parts > 1 && total < kMinRowsPerShare * parts) return false;
  parallel(ctx, parts, 1, [&](int64_t pb, int64_t pe) {
    ETNP_THREAD_LOCAL(FloatBuffer, win);  // grow only
    ETNP_THREAD_LOCAL(FloatBuffer, dbuf);
    if (pw && win.size() < (size_t)(cap * row)) win.resize((size_t)(cap * row));
    if (pp && dbuf.size() < (size_t)(batch * OW * C)) dbuf.resize((size_t)(batch * OW * C));
    float* S = win.data();
    for (int64_t part = pb; part < pe; part++) {
      int64_t r = total * part / parts, r_end = total * (part + 1) / parts;
      while (r < r_end) {  // one image's rows at a time
        const int64_t bn = r / OH, o_end = std::min(r_end, (bn + 1) * OH) - bn * OH;
        const float* Xb = X + bn * H * W * Cin;
        int64_t base = 0, filled = pw ? 0 : H;  // expanded rows [base, filled) are in the window
        bool empty = true;
        for (int64_t oh = r - bn * OH; oh < o_end;) {
          const int64_t ob = std::min(batch, o_end - oh);
          const float* rows = Xb;  // depthwise input, its first row being expanded row `base`
          if (pw) {
            const int64_t lo = std::max<int64_t>(0, oh * n.sh - n.pad_top);
            const int64_t hi = std::min<int64_t>(H, (oh + ob - 1) * n.sh - n.pad_top + span);
            if (empty || lo >= filled) {
              base = filled = lo;
              empty = false;
            } else if (hi - base > cap) {  // slide: keep the rows still needed at the front
              std::memmove(S, S + (lo - base) * row, (size_t)((filled - lo) * row) * sizeof(float));
              base = lo;
            }
            if (hi > filled) {
              float* fresh = S + (filled - base) * row;  // rows [filled, hi), expanded now
              sgemm_packed(nullptr, (hi - filled) * W, Xb + filled * W * Cin, Cin, 1, *pw, fresh, C, ep_pre);
              if (e_grid) finalize_range(*e_grid, fresh, fresh, (hi - filled) * row);
              filled = hi;
            }
            rows = S;
          }
          // output rows [oh, oh + ob) as rows [0, ob) of a short image over the window
          DepthwiseGeom dg{1, filled - base, W, C, ob, OW, KH, KW, n.sh, n.sw, n.dh, n.dw,
                           (int64_t)n.pad_top + base - oh * (int64_t)n.sh, n.pad_left, n.out_min, n.out_max};
          const int64_t out_row = (bn * OH + oh) * OW;  // first output pixel of the step
          if (pp) {
            depthwise_nhwc_f32(dg, rows, wd, bias, dbuf.data(), 0, ob);
            if (d_grid) finalize_range(*d_grid, dbuf.data(), dbuf.data(), ob * OW * C);
            GemmEpilogue ep = ep_post;
            if (ep.residual) ep.residual += out_row * OC;
            sgemm_packed(nullptr, ob * OW, dbuf.data(), C, 1, *pp, Y + out_row * OC, OC, ep);
          } else {
            depthwise_nhwc_f32(dg, rows, wd, bias, Y + out_row * C, 0, ob);
          }
          oh += ob;
        }
        r = bn * OH + o_end;
      }
    }
  });
  return true;
}

}  // namespace etnp::xnn
