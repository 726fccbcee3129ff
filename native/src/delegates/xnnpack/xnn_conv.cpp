// Convolution XNNPACK nodes (NHWC): Conv2d as GEMM (1x1), indirect GEMM or im2col + GEMM (KxK), 1-D
// convolutions on an NCHW input straight from its planes (xnn_conv_rows.cpp),
// reading a fused NCHW input in place where it can; depthwise (xnn_deconv.cpp: transposed).
#include "delegates/xnnpack/xnn_node_util.h"
#include "delegates/xnnpack/xnn_chain.h"
#include "delegates/xnnpack/xnn_im2col.h"
#include "delegates/xnnpack/xnn_conv_rows.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/depthwise.h"
#include "kernels/kernel_util.h"
#include "kernels/compute/gemm.h"
#include "kernels/compute/transpose_f32.h"
#include "kernels/compute/winograd_f32.h"
#include "os/thread_slot.h"

namespace etnp::xnn {

namespace {

// Convolution as an indirect GEMM (AVX-512): every output pixel's taps are read in place from
// the input, zero-padded once into a scratch copy when the node pads (or reads an NCHW input,
// transposed on the way into the copy); no im2col rows. False, before any work, when the CPU
// path has no indirect kernel or the offsets would not fit in int32.
// Its input (the first group, gi 0, prepares what every group shares): the base the row pointers
// point into - the input, or its zero-padded copy - and the tap offsets in sc.conv_koff; null,
// before any work, where the path does not apply. Hp, Wp: the padded input's height and width.
const float* indirect_input(KernelContext& ctx, const Node& n, const Value& a, bool nchw, int64_t gi, int64_t N,
                            int64_t H, int64_t W, int64_t C, int64_t ICg, int64_t K, Scratch& sc, int64_t& Hp,
                            int64_t& Wp) {
  static const bool avx512 = cpu_has_avx512f();
  if (!avx512) return nullptr;
  const int64_t pt = n.pad_top, pb = n.pad_bottom, pl = n.pad_left, pr = n.pad_right;
  Hp = H + pt + pb;
  Wp = W + pl + pr;
  const int64_t KW = n.kw;
  if ((int64_t)n.kh * n.dh * Wp * C + (KW * n.dw + 1) * C > INT32_MAX) return nullptr;
  const float* base = a.cdata();
  if (nchw || pt || pb || pl || pr) {
    if (gi == 0) {  // one padded copy serves every group
      sc.padded.resize((size_t)(N * Hp * Wp * C));
      float* P = sc.padded.data();
      const float* X = a.cdata();
      if (nchw && !pl && !pr) {  // no padding along a row: each image's C x H * W planes transposed in one
        // piece (a Conv1d's [C, L, 1] signal: gathering a pixel's channels one by one reads C lines)
        const int64_t HW = H * W;
        for (int64_t bn = 0; bn < N; bn++) {
          float* img = P + bn * Hp * W * C;
          std::memset(img, 0, (size_t)(pt * W * C) * 4);
          std::memset(img + (pt + H) * W * C, 0, (size_t)(pb * W * C) * 4);
          parallel(ctx, HW, 256, [&](int64_t b, int64_t e) {
            transpose_2d_f32(X + bn * C * HW, C, HW, img + pt * W * C, b, e, 0, C);
          });
        }
      } else {
        parallel(ctx, N * Hp, 8, [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; r++) {
            int64_t bn = r / Hp, h = r % Hp - pt;
            float* dst = P + r * Wp * C;
            if (h < 0 || h >= H) {
              std::memset(dst, 0, (size_t)(Wp * C) * 4);
              continue;
            }
            std::memset(dst, 0, (size_t)(pl * C) * 4);
            if (nchw) {  // row h of every channel plane, interleaved: pixels [h * W, (h + 1) * W) of the
              // image's C x HW transpose, written from dst + pl * C on (the base below stays inside P: Wp >= W)
              transpose_2d_f32(X + bn * C * H * W, C, H * W, dst + pl * C - h * W * C, h * W, (h + 1) * W, 0, C);
            } else {
              std::memcpy(dst + pl * C, X + (bn * H + h) * W * C, (size_t)(W * C) * 4);
            }
            std::memset(dst + (pl + W) * C, 0, (size_t)(pr * C) * 4);
          }
        });
      }
    }
    base = sc.padded.data();
  }
  if (gi == 0) {  // tap offsets are the same for every group
    sc.conv_koff.resize((size_t)K);
    for (int64_t i = 0, k = 0; i < (int64_t)n.kh; i++)
      for (int64_t j = 0; j < KW; j++)
        for (int64_t c = 0; c < ICg; c++, k++) sc.conv_koff[(size_t)k] = (int32_t)((i * n.dh * Wp + j * n.dw) * C + c);
  }
  return base;
}

// chain: the chain after the node (Node::then) may run on the GEMM's rows (chain_on_rows)
bool conv_indirect(KernelContext& ctx, Node& n, const Value& a, bool nchw, int64_t gi, int64_t N, int64_t H,
                   int64_t W, int64_t C, int64_t ICg, int64_t OH, int64_t OW, int64_t K, int64_t M,
                   const GemmEpilogue& ep, float* Cp, int64_t OC, Scratch& sc, bool chain) {
  int64_t Hp, Wp;
  const float* base = indirect_input(ctx, n, a, nchw, gi, N, H, W, C, ICg, K, sc, Hp, Wp);
  if (!base) return false;
  sc.conv_rows.resize((size_t)M);
  parallel(ctx, M, 4096, [&](int64_t b, int64_t e) {
    padded_window_rows(n, base, Hp, Wp, C, OH, OW, b, e, gi * ICg, sc.conv_rows.data() + b);
  });
  GemmEpilogue e = ep;
  if (ChainHook* h = take_chain(n, chain)) chain_on_rows(e, h, OC);  // (the GEMM below cannot fail now)
  // taps at consecutive offsets (one kernel row, or a column over a one-pixel-wide image, without
  // dilation: a 1-D convolution's window is K adjacent floats of the NHWC input): read as rows
  const int32_t* koff = sc.conv_koff.data();
  bool adjacent = true;
  for (int64_t k = 0; k < K && adjacent; k++) adjacent = koff[k] == k;
  return sgemm_packed_indirect(ctx.pool, M, sc.conv_rows.data(), adjacent ? nullptr : koff, n.packed[gi], Cp, OC, e);
}

// A grouped convolution of small groups as indirect GEMMs, all groups in one region: tasks are
// blocks of output pixels x groups, each an indirect GEMM of its rows on its group's weights (the
// group-by-group path gives every group a region of its own, too small to share among threads:
// RegNet's 26 groups of 8 channels on an 8x8 map are 37 K multiply-adds each). The same kernel
// and rows as that path. False, before any work, where the indirect GEMM does not apply.
bool conv_indirect_groups(KernelContext& ctx, const Node& n, const Value& a, bool nchw, int64_t N, int64_t H,
                          int64_t W, int64_t C, int64_t OH, int64_t OW, int64_t K, int64_t M, const float* bias,
                          const Value* res, Value& o, Scratch& sc) {
  const int64_t G = n.groups, ICg = n.group_in, OCg = n.group_out, OC = G * OCg;
  int64_t Hp, Wp;
  const float* base = indirect_input(ctx, n, a, nchw, 0, N, H, W, C, ICg, K, sc, Hp, Wp);
  if (!base) return false;
  const int64_t rows = balanced_rows(M, 264, 24), blocks = (M + rows - 1) / rows;
  const int32_t* koff = sc.conv_koff.data();
  std::atomic<bool> ok{true};  // (written by whichever task's GEMM declines)
  parallel(ctx, blocks * G, 1, [&](int64_t b, int64_t e) {
    ETNP_THREAD_LOCAL(std::vector<const float*>, block_ptrs);  // grow only
    ETNP_THREAD_LOCAL(std::vector<const float*>, ptrs);
    if (ptrs.size() < (size_t)rows) ptrs.resize((size_t)rows), block_ptrs.resize((size_t)rows);
    int64_t table = -1;  // the block whose pixels' addresses (group 0) are in block_ptrs
    for (int64_t t = b; t < e; t++) {
      const int64_t blk = t / G, m0 = blk * rows, m1 = std::min(M, m0 + rows), gt = t % G;
      if (table != blk) {  // (once per block: a group's addresses are these plus its offset)
        padded_window_rows(n, base, Hp, Wp, C, OH, OW, m0, m1, 0, block_ptrs.data());
        table = blk;
      }
      for (int64_t m = 0; m < m1 - m0; m++) ptrs[(size_t)m] = block_ptrs[(size_t)m] + gt * ICg;
      GemmEpilogue ep = epilogue(n, bias ? bias + gt * OCg : nullptr);
      with_residual(ep, n, res, gt * OCg + m0 * OC, OC);
      if (!sgemm_packed_indirect(nullptr, m1 - m0, ptrs.data(), koff, n.packed[(size_t)gt],
                                 o.data.data() + gt * OCg + m0 * OC, OC, ep))
        ok.store(false, std::memory_order_relaxed);  // (not on a CPU where indirect_input succeeded)
    }
  });
  return ok.load();
}

// A convolution reading an NCHW input in place (a fused input transpose, one group, AVX-512):
// an indirect GEMM whose tap offsets step through channel planes (c * H * W + i * W + j). The
// output pixels whose window crosses the padding get wrong values from it (their row pointers
// are kept inside the input) and are then recomputed from zero-padded im2col rows, a few rows
// and columns of the image. No padded copy of the input is made. False, before any work, where
// this path does not apply or the border is over an eighth of the image.
bool conv_nchw_direct(KernelContext& ctx, const Node& n, const Value& a, int64_t N, int64_t H, int64_t W, int64_t C,
                      int64_t OH, int64_t OW, int64_t K, const GemmEpilogue& ep, float* Y, int64_t OC, Scratch& sc) {
  static const bool avx512 = cpu_has_avx512f();
  if (!avx512 || n.groups != 1 || n.packed.size() != 1 || C * H * W > INT32_MAX || N * OH * OW == 0) return false;
  const int64_t KH = n.kh, KW = n.kw, sh = n.sh, sw = n.sw, dh = n.dh, dw = n.dw, pt = n.pad_top, pl = n.pad_left;
  if ((KH - 1) * dh >= H || (KW - 1) * dw >= W) return false;  // every tap offset must stay inside an image
  // A 1-D signal (an image one pixel wide or high): its NHWC copy is one transpose, and the GEMM
  // then reads each window's taps from adjacent pixels (conv_indirect), where this path reads a
  // cache line of another plane for every channel and tap: Conv1d(256, 256, 11, dilation 5) on 400
  // frames 8.7 -> 3.8 ms, (512, 512, 3, stride 2) on 3199 28.6 -> 23.0, (80, 384, 3) on 3000 8.8 -> 6.4
  // (1 thread, CPU time)
  if ((H == 1 && KH == 1) || (W == 1 && KW == 1)) return false;
  const int64_t plane = H * W, M = N * OH * OW;
  const float* X = a.cdata();
  // output rows / columns whose whole window lies inside the input: [oh_lo, oh_hi) x [ow_lo, ow_hi)
  auto inside_range = [](int64_t out, int64_t in, int64_t k, int64_t s, int64_t d, int64_t p, int64_t& lo, int64_t& hi) {
    lo = 0;
    while (lo < out && lo * s - p < 0) lo++;
    hi = out;
    while (hi > lo && (hi - 1) * s - p + (k - 1) * d >= in) hi--;
  };
  int64_t oh_lo, oh_hi, ow_lo, ow_hi;
  inside_range(OH, H, KH, sh, dh, pt, oh_lo, oh_hi);
  inside_range(OW, W, KW, sw, dw, pl, ow_lo, ow_hi);
  // small images are mostly border: a padded copy then costs less than recomputing the border
  if ((OH * OW - (oh_hi - oh_lo) * (ow_hi - ow_lo)) * 8 > OH * OW) return false;
  sc.conv_koff.resize((size_t)K);
  for (int64_t i = 0, k = 0; i < KH; i++)
    for (int64_t j = 0; j < KW; j++)
      for (int64_t c = 0; c < C; c++, k++) sc.conv_koff[(size_t)k] = (int32_t)(c * plane + i * dh * W + j * dw);
  sc.conv_rows.resize((size_t)M);
  parallel(ctx, N * OH, std::max<int64_t>(1, 4096 / OW), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) {
      const int64_t bn = r / OH, oh = r % OH;
      const float* img = X + bn * C * plane;
      const float** rp = sc.conv_rows.data() + r * OW;
      const bool row_in = oh >= oh_lo && oh < oh_hi;
      for (int64_t ow = 0; ow < OW; ow++)  // border pixels read the image's first taps, fixed below
        rp[ow] = row_in && ow >= ow_lo && ow < ow_hi ? img + (oh * sh - pt) * W + (ow * sw - pl) : img;
    }
  });
  if (!sgemm_packed_indirect(ctx.pool, M, sc.conv_rows.data(), sc.conv_koff.data(), n.packed[0], Y, OC, ep))
    return false;  // (not reached: AVX-512 checked above)
  // The border pixels again, in pieces with a regular output stride: whole rows, then the left and
  // right columns of the inner rows; pieces run in parallel (their input reads are scattered).
  struct Piece {
    int64_t bn, oh0, ow0, count, step_h, step_w;
  };
  std::vector<Piece> pieces;
  constexpr int64_t kPiece = 32;  // output pixels
  auto add = [&](int64_t bn, int64_t oh0, int64_t ow0, int64_t count, int64_t step_h, int64_t step_w) {
    for (int64_t t = 0; t < count; t += kPiece)
      pieces.push_back({bn, oh0 + t * step_h, ow0 + t * step_w, std::min(kPiece, count - t), step_h, step_w});
  };
  for (int64_t bn = 0; bn < N; bn++) {
    for (int64_t oh = 0; oh < OH; oh++)
      if (oh < oh_lo || oh >= oh_hi) add(bn, oh, 0, OW, 0, 1);
    if (oh_hi > oh_lo)
      for (int64_t ow = 0; ow < OW; ow++)
        if (ow < ow_lo || ow >= ow_hi) add(bn, oh_lo, ow, oh_hi - oh_lo, 1, 0);
  }
  parallel(ctx, (int64_t)pieces.size(), 1, [&](int64_t b, int64_t e) {
    ETNP_THREAD_LOCAL(FloatBuffer, col);  // grows only
    if (col.size() < (size_t)(kPiece * K)) col.resize((size_t)(kPiece * K));
    for (int64_t q = b; q < e; q++) {
      const Piece& p = pieces[(size_t)q];
      for (int64_t t = 0; t < p.count; t++) {
        const int64_t oh = p.oh0 + t * p.step_h, ow = p.ow0 + t * p.step_w;
        float* row = col.data() + t * K;
        for (int64_t i = 0, k = 0; i < KH; i++)
          for (int64_t j = 0; j < KW; j++) {
            const int64_t ih = oh * sh - pt + i * dh, iw = ow * sw - pl + j * dw;
            const bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;
            for (int64_t c = 0; c < C; c++, k++) row[k] = in ? X[((p.bn * C + c) * H + ih) * W + iw] : 0.f;
          }
      }
      const int64_t m0 = (p.bn * OH + p.oh0) * OW + p.ow0, step = p.step_h * OW + p.step_w;
      GemmEpilogue e = ep;
      if (e.residual) {
        e.residual += m0 * e.ldr;
        e.ldr *= step;
      }
      sgemm_packed(nullptr, p.count, col.data(), K, 1, n.packed[0], Y + m0 * OC, step * OC, e);
    }
  });
  return true;
}

}  // namespace

void conv2d(KernelContext& ctx, Graph& g, Node& n, Scratch& sc) {
  if (n.nchw_output != kInvalidId) return conv2d_nchw_output(ctx, g, n, sc);  // (xnn_conv_rows.cpp)
  const Value* ap = &in(g, n, 0);  // NHWC, or NCHW when a transpose was fused in (until it runs)
  Value& w = in(g, n, 1);
  bool nchw = n.nchw_transposed != kInvalidId;
  if (nchw && (n.nchw_transposed == n.inputs[0] || n.nchw_transposed == n.output || n.inputs[0] == n.output))
    fail(n, "reads and writes one value");
  if (ap->shape.size() != 4 || w.shape.size() != 4) fail(n, "expects 4-D NHWC input and filter");
  const std::vector<int64_t>& is = ap->shape;
  int64_t N = is[0], H = nchw ? is[2] : is[1], W = nchw ? is[3] : is[2], C = nchw ? is[1] : is[3];
  int64_t G = n.groups, ICg = n.group_in, OCg = n.group_out, OC = G * OCg;
  if (C != G * ICg) fail(n, "input has " + std::to_string(C) + " channels, expected " + std::to_string(G * ICg));
  int64_t OH = pool_dim(n, H, n.kh, n.sh, n.dh, n.pad_top, n.pad_bottom), OW = pool_dim(n, W, n.kw, n.sw, n.dw, n.pad_left, n.pad_right);
  const std::vector<int64_t> oshape{N, OH, OW, OC};
  const Value* res = fused_residual(g, n, oshape);
  Value& o = gemm_output(g, n, oshape);
  int64_t K = (int64_t)n.kh * n.kw * ICg, M = N * OH * OW;
  const int64_t FKH = n.filter_kh ? n.filter_kh : n.kh, FKW = n.filter_kw ? n.filter_kw : n.kw;  // (lower_dead_taps)
  check_filter(n, w, {OC, FKH, FKW, ICg});
  if (n.filter_kh && n.packed.empty()) fail(n, "trimmed filter was not packed");  // (its taps: a window of w)
  if (n.filter_kh && (H > n.planned_h || W > n.planned_w))  // (lower_dead_taps: a dropped tap could read it)
    fail(n, "input of " + std::to_string(H) + "x" + std::to_string(W) + " pixels, larger than the graph's " +
                std::to_string(n.planned_h) + "x" + std::to_string(n.planned_w));
  if (M * K > (int64_t(1) << 32)) fail(n, "im2col buffer would be too large");
  const float* bias = bias_of(g, n, OC);
  bool pointwise = n.kh == 1 && n.kw == 1 && n.sh == 1 && n.sw == 1 && !n.pad_top && !n.pad_left && !n.pad_bottom && !n.pad_right;
  if (!n.packed.empty() && !n.winograd && !n.winograd1d) {  // (a Winograd node's are checked by its kernel)
    if ((int64_t)n.packed.size() != G) fail(n, "packed weights do not match the filter");
    for (const PackedB& pb : n.packed)
      if (pb.K != K || pb.N != OCg) fail(n, "packed weights do not match the filter");
  }
  // the fused transpose, as its own step, where the convolution cannot read NCHW directly
  auto transpose_input = [&] {
    Value& t = g.values[n.nchw_transposed];
    ensure_shape(t, {N, H, W, C});
    if (!transpose_as_batched_2d(ctx, *ap, {0, 2, 3, 1}, t)) fail(n, "cannot transpose the NCHW input");
    ap = &t;
    nchw = false;
  };
  if (M == 0 || OC == 0) return;  // empty output (its buffer may be null: no pointer arithmetic on it)
  if (!n.qconv.empty() && !nchw && !res) {
    if (conv2d_q8(ctx, g, n, *ap, N, H, W, OH, OW, bias, o, sc)) return;
    if (n.packed.empty()) fail(n, "int8 filter packed for an input that is not on an int8 grid");
  }
  if (ap->as_codes || o.as_codes) fail(n, "a value kept as int8 codes on the float path");  // (the plan rules it out)
  // The chain after the node (Node::then) runs on the output's rows as the paths below finish
  // them, where a path can (one group, a float32 output - final once the GEMM wrote it - no
  // residual still to add): prepared on the first such path, which must then cover every row.
  auto chain_ok = [&](int64_t gi) {
    return G == 1 && gi == 0 && !n.residual_pending && o.dtype == FP32 && o.quant == Quant::None;
  };
  auto chain_ready = [&](int64_t gi) { return take_chain(n, chain_ok(gi) && M >= 192) != nullptr; };
  if (n.winograd) {  // F(2x2, 3x3) on its transformed filters (xnn_winograd.cpp)
    if (nchw) transpose_input();
    GemmEpilogue ep = epilogue(n, bias);
    with_residual(ep, n, res, 0, OC);
    ChainHook* h = take_chain(n, chain_ok(0));
    if (h) chain_on_rows(ep, h, OC);
    const WinogradGeom wg{N, H, W, C, OH, OW, OC, n.pad_top, n.pad_left, n.dh};
    if (!conv3x3_winograd_f32(ctx.pool, wg, ap->cdata(), n.packed, o.data.data(), ep))
      fail(n, "Winograd filters do not match the convolution");  // (before any work: the chain too)
    return;
  }
  if (n.winograd1d) {  // F(3, 3) over pieces of 3 taps on its transformed filters (xnn_winograd.cpp)
    if ((n.kw == 1 ? W : H) != 1) fail(n, "1-D convolution planned for an input one pixel wide, got " + std::to_string(H) + "x" + std::to_string(W));
    GemmEpilogue ep = epilogue(n, bias);
    with_residual(ep, n, res, 0, OC);
    ChainHook* h = take_chain(n, chain_ok(0));
    if (h) chain_on_rows(ep, h, OC);
    run_winograd1d(ctx, n, ap->cdata(), nchw, N, H, W, C, OH, OW, o.data.data(), ep);  // (NCHW read in place)
    return;
  }
  // im2col of output pixels [m_begin, m_end) of group gi into rows of K floats at dst (xnn_im2col.h)
  auto im2col = [&](int64_t gi, int64_t m_begin, int64_t m_end, float* dst_rows) {
    im2col_rows(n, ap->cdata(), H, W, C, OH, OW, gi, m_begin, m_end, dst_rows, K, 0.f);
  };
  if (G > 1 && !n.packed.empty() && !pointwise && (!nchw || fusion_mode() != FusionMode::Steps) &&
      conv_indirect_groups(ctx, n, *ap, nchw, N, H, W, C, OH, OW, K, M, bias, res, o, sc))
    return;
  for (int64_t gi = 0; gi < G; gi++) {
    GemmEpilogue ep = epilogue(n, bias ? bias + gi * OCg : nullptr);
    with_residual(ep, n, res, gi * OCg, OC);
    float* Cp = o.data.data() + gi * OCg;
    if (nchw && fusion_mode() == FusionMode::Steps) transpose_input();
    // a 1-D convolution (one kernel row, or one column over a one-column image): xnn_conv_rows.cpp
    if (nchw && !pointwise && conv_nchw_rows(ctx, n, *ap, N, H, W, C, OH, OW, ep, Cp, OC)) continue;
    if (nchw && !pointwise && conv_nchw_direct(ctx, n, *ap, N, H, W, C, OH, OW, K, ep, Cp, OC, sc)) continue;
    if (!n.packed.empty() && !pointwise &&
        conv_indirect(ctx, n, *ap, nchw, gi, N, H, W, C, ICg, OH, OW, K, M, ep, Cp, OC, sc, chain_ok(gi)))
      continue;
    if (nchw) transpose_input();  // (first group: conv_indirect fails before any work or never)
    if (pointwise) {
      const float* A = ap->cdata() + gi * ICg;
      if (!n.packed.empty() && chain_ready(gi)) {  // blocks of rows, each followed by the chain on them
        const int64_t rows = balanced_rows(M, 96, 24, ctx.pool ? ctx.pool->num_threads() : 1),
                    blocks = (M + rows - 1) / rows;
        parallel(ctx, blocks, 1, [&](int64_t b, int64_t e) {
          const int64_t m0 = b * rows, m1 = std::min(M, e * rows);
          GemmEpilogue epb = epilogue(n, bias);
          with_residual(epb, n, res, m0 * OC, OC);
          sgemm_packed(nullptr, m1 - m0, A + m0 * C, C, 1, n.packed[0], Cp + m0 * OC, OC, epb);
          n.then->run.run(m0 * OC, m1 * OC);
        });
        continue;
      }
      GemmEpilogue e = ep;  // (fewer rows: the chain, if any, on the GEMM's tasks' rows)
      if (ChainHook* h = take_chain(n, chain_ok(gi))) chain_on_rows(e, h, OC);
      if (!n.packed.empty()) sgemm_packed(ctx.pool, M, A, C, 1, n.packed[gi], Cp, OC, e);
      else sgemm(ctx.pool, M, OCg, K, A, C, 1, w.data.data() + gi * OCg * K, 1, K, Cp, OC, e);
      continue;
    }
    if (!n.packed.empty()) {
      // (a multiple of 24 rows: whole 6-row AVX2 and 8-row AVX-512 tiles, no ragged tile a block)
      const int64_t rows = balanced_rows(M, std::max<int64_t>(24, std::min<int64_t>(264, (int64_t(1) << 14) / K)) / 24 * 24, 24);
      const int64_t blocks = (M + rows - 1) / rows, groups = G - gi;
      if (unfold_whole(ctx, blocks * groups, M * K * (int64_t)sizeof(float))) {  // (xnn_im2col.h)
        sc.col.resize((size_t)(M * K));
        float* col = sc.col.data();
        parallel(ctx, blocks, 1, [&](int64_t b, int64_t e) { im2col(gi, b * rows, std::min(M, e * rows), col + b * rows * K); });
        sgemm_packed(ctx.pool, M, col, K, 1, n.packed[gi], Cp, OC, ep);
        continue;
      }
      // Blocks of output pixels x groups [gi, G), each unfolded into a small per-thread buffer
      // (kept in cache) and multiplied right away: no full-size im2col pass through memory. One
      // region for all the groups (a grouped convolution's groups are small GEMMs each). With one
      // group, the chain after the node (if any) runs on each block's rows right away.
      const bool chained = groups == 1 && chain_ready(gi);
      parallel(ctx, blocks * groups, 1, [&](int64_t b, int64_t e) {
        ETNP_THREAD_LOCAL(FloatBuffer, buf);  // grows only
        if (buf.size() < (size_t)(rows * K)) buf.resize((size_t)(rows * K));
        for (int64_t t = b; t < e; t++) {
          const int64_t m0 = t / groups * rows, m1 = std::min(M, m0 + rows), gt = gi + t % groups;
          im2col(gt, m0, m1, buf.data());
          GemmEpilogue epb = epilogue(n, bias ? bias + gt * OCg : nullptr);
          with_residual(epb, n, res, gt * OCg + m0 * OC, OC);
          sgemm_packed(nullptr, m1 - m0, buf.data(), K, 1, n.packed[gt], o.data.data() + gt * OCg + m0 * OC, OC, epb);
          if (chained) n.then->run.run(m0 * OC, m1 * OC);
        }
      });
      break;
    }
    // weights computed at run time: one im2col buffer, then a GEMM
    // (filter [OC, KH, KW, ICg]: B(k, oc) = w[(gi*OCg + oc)*K + k])
    sc.col.resize((size_t)(M * K));
    float* col = sc.col.data();
    parallel(ctx, M, 64, [&](int64_t b, int64_t e) { im2col(gi, b, e, col + b * K); });
    sgemm(ctx.pool, M, OCg, K, col, K, 1, w.data.data() + gi * OCg * K, 1, K, Cp, OC, ep);
  }
}

// into `o`: the node's output, or its own result when a projection was fused after it
bool depthwise(KernelContext& ctx, Graph& g, Node& n, Value& o, Scratch& sc) {
  Value &a = in(g, n, 0), &w = in(g, n, 1);
  if (a.shape.size() != 4 || w.shape.size() != 4) fail(n, "expects 4-D NHWC input and filter");
  int64_t N = a.shape[0], H = a.shape[1], W = a.shape[2], C = a.shape[3], OC = w.shape[3];
  if (C <= 0 || OC <= 0 || OC % C) fail(n, "filter channels are not a multiple of input channels (or none)");
  int64_t mult = OC / C, KH = n.kh, KW = n.kw;
  int64_t OH = pool_dim(n, H, KH, n.sh, n.dh, n.pad_top, n.pad_bottom), OW = pool_dim(n, W, KW, n.sw, n.dw, n.pad_left, n.pad_right);
  ensure_shape(o, {N, OH, OW, OC});
  check_filter(n, w, {1, KH, KW, OC});
  const float* bias = bias_of(g, n, OC);
  const float* wd = w.data.data();
  float lo = n.out_min, hi = n.out_max;
  // output rows across threads; below 64 Ki multiply-adds in all (a few rows of a small map) a
  // thread-pool region costs more than it saves
  const int64_t rows = N * OH, grain = rows * OW * OC * KH * KW < (int64_t(1) << 16) ? rows : 1;
  // each task finishes its rows (snapped to an int8 grid, rounded to fp16/bf16) while they are in
  // cache, instead of run_node's pass over the whole output afterwards
  const bool finish = !dynamically_quantized(o);
  const int64_t row_len = OW * OC;
  // the chain after the node (Node::then), run on each task's rows once they are final (every row
  // goes through finish_rows below)
  ChainHook* then = take_chain(n, &o == &out(g, n) && finish);
  auto finish_rows = [&](int64_t b, int64_t e) {
    if (finish) finalize_range(o, o.data.data() + b * row_len, o.data.data() + b * row_len, (e - b) * row_len);
    if (then) then->run.run(b * row_len, e * row_len);
  };
  if (mult == 1 && n.dw_int8) {  // static int8 on codes (planned: plan_codes)
    DepthwiseGeom dg{N, H, W, C, OH, OW, KH, KW, n.sh, n.sw, n.dh, n.dw, n.pad_top, n.pad_left, lo, hi};
    if (depthwise_q8_rows(ctx, n, a, dg, bias, o, sc, then)) return true;
  }
  if (a.as_codes || o.as_codes) fail(n, "a value kept as int8 codes on the float path");  // (the plan rules it out)
  if (mult == 1) {
    DepthwiseGeom dg{N, H, W, C, OH, OW, KH, KW, n.sh, n.sw, n.dh, n.dw, n.pad_top, n.pad_left, lo, hi};
    const float* x = a.data.data();
    float* y = o.data.data();
    parallel(ctx, rows, grain, [&](int64_t b, int64_t e) {
      depthwise_nhwc_f32(dg, x, wd, bias, y, b, e);
      finish_rows(b, e);
    });
    return finish;
  }
  // channel multiplier > 1 (output channel c reads input channel c / mult): the input with each
  // channel repeated mult times, then the multiplier-1 kernel over OC channels. (One input channel
  // - a 1-D front end's Conv1d(1, C, k) - runs as a convolution on the GEMM: lower_depthwise_as_conv.)
  const float* x = a.data.data();
  if (N * H * W * OC > (int64_t(1) << 32)) fail(n, "expanded input would be too large");
  sc.expanded.resize((size_t)(N * H * W * OC));
  float* xe = sc.expanded.data();
  parallel(ctx, N * H * W, std::max<int64_t>(1, 4096 / OC), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; p++) {
      const float* xp = x + p * C;
      float* d = xe + p * OC;
      for (int64_t c = 0; c < C; c++)
        for (int64_t j = 0; j < mult; j++) d[c * mult + j] = xp[c];
    }
  });
  DepthwiseGeom dg{N, H, W, OC, OH, OW, KH, KW, n.sh, n.sw, n.dh, n.dw, n.pad_top, n.pad_left, lo, hi};
  float* y = o.data.data();
  parallel(ctx, rows, grain, [&](int64_t b, int64_t e) {
    depthwise_nhwc_f32(dg, xe, wd, bias, y, b, e);
    finish_rows(b, e);
  });
  return finish;
}

void lower_depthwise_as_conv(Graph& g) {
  const std::vector<int> uses = count_readers(g);
  for (Node& n : g.nodes) {
    if (n.type != DepthwiseConv2d || n.inputs.size() < 2 || n.inputs[0] >= uses.size() || n.inputs[1] >= uses.size())
      continue;
    const Value& x = g.values[n.inputs[0]];
    Value& w = g.values[n.inputs[1]];
    if (x.dims.size() != 4 || x.dims[3] != 1 || !float_unquantized(x) || !w.is_constant || !float_unquantized(w) || w.qraw ||
        w.dims.size() != 4 || w.dims[0] != 1 || w.dims[1] != n.kh || w.dims[2] != n.kw || w.dims[3] < 1 ||
        uses[n.inputs[1]] != 1 || n.groups != 1)
      continue;
    const int64_t OC = w.dims[3];
    n.type = Conv2d;
    n.group_in = 1;
    n.group_out = (uint32_t)OC;
    n.filter_taps_major = true;
    w.dims = {OC, (int64_t)n.kh, (int64_t)n.kw, 1};
    w.shape = w.dims;
  }
}

}  // namespace etnp::xnn
