// ConvTranspose2d (XNNPACK's deconvolution, NHWC) as GEMMs, one per output phase.
//
// Output pixel (oh, ow) receives input pixel (ih, iw) through tap (i, j) where
// oh = ih * sh - pad_top + i * dh (and likewise for columns). Which taps reach an output row
// depends only on its phase r = (oh + pad_top) mod sh: the taps with i * dh = r (mod sh), each from
// input row ih = (oh + pad_top - i * dh) / sh. So the output rows (columns) of one phase are an
// ordinary convolution of the input with that phase's taps: per (group, row phase, column phase)
// the filter's taps are packed once as a [taps * ICg, OCg] GEMM operand, and each output row's
// pixels of one column phase gather their input pixels (zeros outside the input) into rows of
// that K and multiply them (a phase of one tap reads its input pixels in place) - no zero-stuffed
// input, no scatter, every output element written once and by one task, so the work splits across
// threads by output rows and phases.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "delegates/xnnpack/xnn_node_util.h"
#include "kernels/compute/gemm.h"
#include "kernels/kernel_util.h"
#include "os/thread_slot.h"

namespace etnp::xnn {

namespace {

// The taps of a kernel dimension (k taps, dilation d, stride s) that reach outputs of phase r.
std::vector<int64_t> phase_taps(int64_t k, int64_t d, int64_t s, int64_t r) {
  std::vector<int64_t> t;
  for (int64_t i = 0; i < k; i++)
    if ((i * d) % s == r) t.push_back(i);
  return t;
}

int64_t positive_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

// Packed operands of every (group, row phase, column phase), in that order.
std::vector<PackedB> pack_phases(ThreadPool* pool, const Node& n, const float* w, bool half) {
  const int64_t G = n.groups, ICg = n.group_in, OCg = n.group_out, KH = n.kh, KW = n.kw;
  std::vector<PackedB> out;
  out.reserve((size_t)(G * n.sh * n.sw));
  std::vector<float> b;
  for (int64_t gi = 0; gi < G; gi++)
    for (int64_t rh = 0; rh < (int64_t)n.sh; rh++)
      for (int64_t rw = 0; rw < (int64_t)n.sw; rw++) {
        const std::vector<int64_t> ti = phase_taps(KH, n.dh, n.sh, rh), tj = phase_taps(KW, n.dw, n.sw, rw);
        const int64_t K = (int64_t)(ti.size() * tj.size()) * ICg;
        if (K == 0) {
          out.emplace_back();  // no tap reaches this phase: its outputs are the bias
          out.back().N = OCg;
          continue;
        }
        b.assign((size_t)(K * OCg), 0.f);  // B[k][oc], k = (tap, input channel)
        int64_t k = 0;
        for (int64_t i : ti)
          for (int64_t j : tj)
            for (int64_t ic = 0; ic < ICg; ic++, k++)
              for (int64_t oc = 0; oc < OCg; oc++)
                b[(size_t)(k * OCg + oc)] = w[(((gi * OCg + oc) * KH + i) * KW + j) * ICg + ic];
        out.push_back(pack_b(pool, K, OCg, b.data(), OCg, 1, half));
      }
  return out;
}

}  // namespace

void lower_stride1_deconv_as_conv(Graph& g) {
  const std::vector<int> uses = count_readers(g);
  for (Node& n : g.nodes) {
    if (n.type != ConvTranspose2d || n.sh != 1 || n.sw != 1 || !own_float_filter(g, n, uses)) continue;
    const int64_t eh = (int64_t)(n.kh - 1) * n.dh, ew = (int64_t)(n.kw - 1) * n.dw;  // the taps' extent
    if (n.pad_top > eh || n.pad_left > ew || n.pad_bottom > eh + n.adj_h || n.pad_right > ew + n.adj_w) continue;
    n.type = Conv2d;
    n.pad_top = (uint32_t)(eh - n.pad_top);
    n.pad_left = (uint32_t)(ew - n.pad_left);
    n.pad_bottom = (uint32_t)(eh + n.adj_h - n.pad_bottom);
    n.pad_right = (uint32_t)(ew + n.adj_w - n.pad_right);
    n.adj_h = n.adj_w = 0;
    n.filter_flipped = true;
  }
}

void prepare_deconv(ThreadPool* pool, Node& n, const float* filter, bool half) {
  n.packed = pack_phases(pool, n, filter, half);
}

void deconv(KernelContext& ctx, Graph& g, Node& n) {
  Value &a = in(g, n, 0), &w = in(g, n, 1), &o = out(g, n);
  if (a.shape.size() != 4 || w.shape.size() != 4) fail(n, "expects 4-D NHWC input and filter");
  const int64_t N = a.shape[0], H = a.shape[1], W = a.shape[2], C = a.shape[3];
  const int64_t G = n.groups, ICg = n.group_in, OCg = n.group_out, OC = G * OCg, KH = n.kh, KW = n.kw;
  const int64_t sh = n.sh, sw = n.sw, dh = n.dh, dw = n.dw, pt = n.pad_top, pl = n.pad_left;
  if (C != G * ICg) fail(n, "input channels do not match the filter");
  if (sh < 1 || sw < 1 || dh < 1 || dw < 1) fail(n, "stride and dilation must be positive");
  const int64_t OH = (H - 1) * sh + dh * (KH - 1) + 1 - pt - (int64_t)n.pad_bottom + n.adj_h;
  const int64_t OW = (W - 1) * sw + dw * (KW - 1) + 1 - pl - (int64_t)n.pad_right + n.adj_w;
  if (OH <= 0 || OW <= 0) fail(n, "output would be empty");
  ensure_shape(o, {N, OH, OW, OC});
  check_filter(n, w, {OC, KH, KW, ICg});
  if (N == 0 || OC == 0) return;
  const float* bias = bias_of(g, n, OC);
  // weights computed at run time (not a constant the load packed): packed for this call
  std::vector<PackedB> local;
  if (n.packed.size() != (size_t)(G * sh * sw)) local = pack_phases(ctx.pool, n, w.cdata(), false);
  const std::vector<PackedB>& packed = local.empty() ? n.packed : local;
  const float* x = a.cdata();
  float* y = o.data.data();

  // The output pixels of one phase (rh, rw) are the grid (oh0 + sh * t, ow0 + sw * u): a GEMM's
  // rows run along one axis of it (equally spaced in the output), the longer one - along the
  // columns of a 2-D map, along the rows of a 1-D signal exported as H x 1 - in blocks of up to
  // 128 pixels (each GEMM streams its phase's whole packed operand: tall blocks amortise it).
  // Tasks: (image, group, row phase, column phase, position on the other axis, block).
  const bool along_w = (OW + sw - 1) / sw >= (OH + sh - 1) / sh;
  const int64_t max_inner = along_w ? (OW + sw - 1) / sw : (OH + sh - 1) / sh;
  const int64_t max_outer = along_w ? (OH + sh - 1) / sh : (OW + sw - 1) / sw;
  const int64_t block = std::max<int64_t>(1, std::min<int64_t>(max_inner, 128));
  const int64_t blocks = (max_inner + block - 1) / block;
  const int64_t tasks = N * G * sh * sw * max_outer * blocks;
  // each row / column phase's taps, once a call (not per task)
  std::vector<std::vector<int64_t>> taps_h((size_t)sh), taps_w((size_t)sw);
  for (int64_t r = 0; r < sh; r++) taps_h[(size_t)r] = phase_taps(KH, dh, sh, r);
  for (int64_t r = 0; r < sw; r++) taps_w[(size_t)r] = phase_taps(KW, dw, sw, r);
  // tasks of at least 64 Ki multiply-adds between them (as gemm_pool): a split of less work costs
  // the threads' hand-off more than it saves (a 1-D signal of a few hundred samples)
  const int64_t macs = N * OH * OW * OC * ICg * KH * KW / std::max<int64_t>(1, sh * sw);
  const int64_t grain = std::max<int64_t>(1, (tasks * (int64_t(1) << 16)) / std::max<int64_t>(1, macs));
  parallel(ctx, tasks, grain, [&](int64_t t0, int64_t t1) {
    ETNP_THREAD_LOCAL(FloatBuffer, rows);  // the block's gathered input rows (grows only)
    for (int64_t t = t0; t < t1; t++) {
      int64_t r = t;
      const int64_t bk = r % blocks; r /= blocks;
      const int64_t pos = r % max_outer; r /= max_outer;
      const int64_t rw = r % sw; r /= sw;
      const int64_t rh = r % sh; r /= sh;
      const int64_t gi = r % G, bn = r / G;
      // the phase's first output row and column, and how many of each it has
      const int64_t oh0 = positive_mod(rh - pt, sh), ow0 = positive_mod(rw - pl, sw);
      const int64_t nh = oh0 < OH ? (OH - oh0 + sh - 1) / sh : 0, nw = ow0 < OW ? (OW - ow0 + sw - 1) / sw : 0;
      const int64_t inner = along_w ? nw : nh, outer = along_w ? nh : nw;
      const int64_t i0 = bk * block, i1 = std::min(inner, i0 + block);
      if (pos >= outer || i0 >= i1) continue;
      // pixel k of the block: (oh0 + sh * th, ow0 + sw * tw), th / tw from pos and i0 + k
      auto pixel = [&](int64_t k, int64_t& oh, int64_t& ow) {
        oh = oh0 + sh * (along_w ? pos : i0 + k);
        ow = ow0 + sw * (along_w ? i0 + k : pos);
      };
      const PackedB& pb = packed[(size_t)((gi * sh + rh) * sw + rw)];
      GemmEpilogue ep = epilogue(n, bias ? bias + gi * OCg : nullptr);
      int64_t oh, ow;
      pixel(0, oh, ow);
      float* dst = y + ((bn * OH + oh) * OW + ow) * OC + gi * OCg;
      const int64_t ldc = along_w ? sw * OC : sh * OW * OC, m = i1 - i0;
      if (pb.K == 0) {  // no tap reaches this phase
        for (int64_t k = 0; k < m; k++)
          for (int64_t oc = 0; oc < OCg; oc++)
            dst[k * ldc + oc] = std::min(std::max(bias ? bias[gi * OCg + oc] : 0.f, ep.min), ep.max);
        continue;
      }
      const std::vector<int64_t>& ti = taps_h[(size_t)rh];
      const std::vector<int64_t>& tj = taps_w[(size_t)rw];
      const int64_t K = pb.K;
      if (K == ICg) {
        // One tap (stride >= kernel extent: U-Net's 2x2 / 2, a 1-D upsampler): its block's
        // input pixels are equally spaced - read in place as the GEMM's rows where all are inside
        // the input, no gathered copy. (Else a gathered block: zero rows for the pixels outside.)
        const int64_t i = ti[0], j = tj[0];
        int64_t ohl, owl;
        pixel(m - 1, ohl, owl);
        const int64_t qh0 = oh + pt - i * dh, qw0 = ow + pl - j * dw, qh1 = ohl + pt - i * dh, qw1 = owl + pl - j * dw;
        if (qh0 >= 0 && qw0 >= 0 && qh1 / sh < H && qw1 / sw < W) {  // (the first is the least, the last the most)
          const float* src = x + ((bn * H + qh0 / sh) * W + qw0 / sw) * C + gi * ICg;
          sgemm_packed(nullptr, m, src, along_w ? C : W * C, 1, pb, dst, ldc, ep);
          continue;
        }
      }
      if ((int64_t)rows.size() < m * K) rows.resize((size_t)(m * K));
      for (int64_t k = 0; k < m; k++) {
        pixel(k, oh, ow);
        float* row = rows.data() + k * K;
        for (int64_t i : ti) {
          const int64_t qh = oh + pt - i * dh, ih = qh / sh;  // (qh is a multiple of sh)
          const bool row_in = qh >= 0 && ih < H;
          for (int64_t j : tj) {
            const int64_t qw = ow + pl - j * dw, iw = qw / sw;
            if (row_in && qw >= 0 && iw < W)
              std::memcpy(row, x + ((bn * H + ih) * W + iw) * C + gi * ICg, (size_t)ICg * sizeof(float));
            else
              std::memset(row, 0, (size_t)ICg * sizeof(float));
            row += ICg;
          }
        }
      }
      sgemm_packed(nullptr, m, rows.data(), K, 1, pb, dst, ldc, ep);
    }
  });
}

}  // namespace etnp::xnn
