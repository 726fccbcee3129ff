// Matrix XNNPACK nodes: fully connected (float GEMM, the int8 GEMM for qd8 x qc8w, the 4-bit one
// for qd8 x qb4w / qc4w), batched matrix multiply, scaled dot-product attention; the GEMM nodes'
// fused-residual helpers.
#include "delegates/xnnpack/xnn_chain.h"
#include "delegates/xnnpack/xnn_node_util.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/kernel_util.h"
#include "kernels/compute/gemm.h"
#include "kernels/compute/qgemm.h"
#include "kernels/compute/quantize_row.h"

namespace etnp::xnn {

// ---- matrix ops ----
// A residual Add fused into this GEMM node (xnn_fuse.cpp): the residual when its shape is the
// output's, so the GEMM epilogue adds it; null otherwise, and the node then writes its own
// result (n.unfused) and run_node applies the add after it (n.residual_pending).
const Value* fused_residual(Graph& g, Node& n, const std::vector<int64_t>& shape) {
  n.residual_pending = false;
  if (n.residual == kInvalidId) return nullptr;
  const Value& r = g.values[n.residual];
  if (r.shape == shape && fusion_mode() != FusionMode::Steps) return &r;
  n.residual_pending = true;
  return nullptr;
}
// Where a GEMM node writes its result, shaped.
Value& gemm_output(Graph& g, const Node& n, const std::vector<int64_t>& shape) {
  Value& o = n.residual_pending ? g.values[n.unfused] : out(g, n);
  ensure_shape(o, shape);
  return o;
}

void check_filter(const Node& n, const Value& w, std::initializer_list<int64_t> want) {
  std::vector<int64_t> s(want);
  if (w.shape != s) fail(n, "filter shape " + shape_str(w.shape) + " does not match the node (" + shape_str(s) + ")");
}

void fully_connected(KernelContext& ctx, Graph& g, Node& n, Scratch& sc) {
  Value &a = in(g, n, 0), &w = in(g, n, 1);
  if (w.shape.size() != 2) fail(n, "filter must be 2-D");
  bool tw = n.flags & kTransposeWeights;
  int64_t IC = tw ? w.shape[0] : w.shape[1], OC = tw ? w.shape[1] : w.shape[0];
  if (a.shape.empty() || a.shape.back() != IC) fail(n, "input " + shape_str(a.shape) + " does not match filter " + shape_str(w.shape));
  std::vector<int64_t> s = a.shape;
  s.back() = OC;
  // the int8 GEMM has no residual epilogue: a fused add then runs after it
  const bool int8_gemm = n.qpacked.N > 0 || !n.qblocks.empty() || n.qb4.N > 0;
  const Value* res = int8_gemm ? nullptr : fused_residual(g, n, s);
  if (int8_gemm && n.residual != kInvalidId) n.residual_pending = true;
  Value& o = gemm_output(g, n, s);
  int64_t M = a.numel() / IC;
  const float* bias = bias_of(g, n, OC);
  GemmEpilogue ep = epilogue(n, bias);
  with_residual(ep, n, res, 0, OC);
  if (n.qpacked.N > 0 && on_int8_grid(a)) {  // static int8 (prepare_fc_q8)
    if (n.qpacked.K != IC || n.qpacked.N != OC) fail(n, "packed weights do not match the filter");
    fully_connected_q8(ctx, n, a, M, IC, OC, bias, o, sc);
    return;
  }
  if (n.qb4.N > 0) {  // qd8 x qb4w / qc4w on the nibbles (qgemm_qb4.h)
    if (n.qb4.K != IC || n.qb4.N != OC) fail(n, "packed weights do not match the filter");
    if (a.row_len <= 0 || a.row_len % IC != 0 || (int64_t)a.row_scale.size() * a.row_len < a.numel() ||
        (int64_t)a.q8.size() < a.numel())
      fail(n, "dynamically quantized input without per-row quantization parameters (corrupt program?)");
    const int64_t per_row = a.row_len / IC;
    sc.row_scale.resize((size_t)M);
    sc.row_zp.resize((size_t)M);
    for (int64_t m = 0; m < M; m++) {
      sc.row_scale[(size_t)m] = a.row_scale[(size_t)(m / per_row)];
      sc.row_zp[(size_t)m] = a.row_zp[(size_t)(m / per_row)];
    }
    qgemm_qb4(ctx.pool, M, a.q8.data(), IC, sc.row_scale.data(), sc.row_zp.data(), n.qb4, bias, n.out_min,
              n.out_max, o.data.data(), OC);
    return;
  }
  if (int8_gemm) {
    // the filter lives only as int8 panels: the input must carry its per-row quantization
    const bool blocks = !n.qblocks.empty();
    // (the blocks' input channels, one after another, are the filter's)
    int64_t packed_k = 0;
    bool ok = true;
    for (const PackedQ8& p : n.qblocks) {
      ok = ok && p.N == OC;
      packed_k += p.K;
    }
    ok = blocks ? ok && packed_k == IC : n.qpacked.K == IC && n.qpacked.N == OC;
    if (!ok) fail(n, "packed weights do not match the filter");
    if (a.row_len <= 0 || a.row_len % IC != 0 || (int64_t)a.row_scale.size() * a.row_len < a.numel() ||
        (int64_t)a.q8.size() < a.numel())
      fail(n, "dynamically quantized input without per-row quantization parameters (corrupt program?)");
    // int8 x int8 on the integers finalize_value kept: per block of K (one block without
    // qblocks), its rows padded to the block's packed K, all blocks' rows one after another
    const int64_t nb = blocks ? (int64_t)n.qblocks.size() : 1, per_row = a.row_len / IC;
    auto packed = [&](int64_t b) -> const PackedQ8& { return blocks ? n.qblocks[(size_t)b] : n.qpacked; };
    std::vector<int64_t>& start = sc.block_start;  // where block b's rows begin in sc.q8
    start.assign((size_t)nb + 1, 0);
    for (int64_t b = 0; b < nb; b++) start[(size_t)b + 1] = start[(size_t)b] + M * packed(b).Kp;
    // one block whose K needs no padding, a row's parameters its own: the input's integers and
    // parameters are already that layout - read in place (a copy per call, and a buffer of the
    // input's size in every delegate, otherwise)
    const bool in_place = nb == 1 && packed(0).Kp == IC && per_row == 1;
    const uint8_t* q8 = in_place ? a.q8.data() : nullptr;
    const float* row_scale = in_place ? a.row_scale.data() : nullptr;
    const int32_t* row_zp = in_place ? a.row_zp.data() : nullptr;
    if (!in_place) {
      sc.q8.resize((size_t)start[(size_t)nb]);
      sc.row_scale.resize((size_t)M);
      sc.row_zp.resize((size_t)M);
      q8 = sc.q8.data();
      row_scale = sc.row_scale.data();
      row_zp = sc.row_zp.data();
      parallel(ctx, M, std::max<int64_t>(1, 4096 / std::max<int64_t>(IC, 1)), [&](int64_t b, int64_t e) {
        for (int64_t m = b; m < e; m++) {
          for (int64_t blk = 0, k0 = 0; blk < nb; k0 += packed(blk).K, blk++) {
            const PackedQ8& p = packed(blk);
            uint8_t* q = sc.q8.data() + start[(size_t)blk] + m * p.Kp;
            std::memcpy(q, a.q8.data() + m * IC + k0, (size_t)p.K);
            std::memset(q + p.K, 0, (size_t)(p.Kp - p.K));
          }
          sc.row_scale[(size_t)m] = a.row_scale[(size_t)(m / per_row)];
          sc.row_zp[(size_t)m] = a.row_zp[(size_t)(m / per_row)];
        }
      });
    }
    // blocks summed in the output: the bias with the first, the clamp with the last
    constexpr float kInf = std::numeric_limits<float>::infinity();
    for (int64_t b = 0; b < nb; b++) {
      QActivations qa{q8 + start[(size_t)b], row_scale, row_zp};
      // qd8 x qc8w: XNNPACK's epilogue order (qgemm.h); the qb4w blocks keep the product of the scales
      qa.scale_rows_first = !blocks;
      QOutput out;
      out.C = o.data.data();
      out.ldc = OC;
      out.accumulate = b > 0;
      const bool last = b + 1 == nb;
      qgemm_q8(ctx.pool, M, qa, packed(b), b == 0 ? bias : nullptr, last ? n.out_min : -kInf, last ? n.out_max : kInf,
               out);
    }
    return;
  }
  if (!n.packed.empty() && (n.packed[0].K != IC || n.packed[0].N != OC)) fail(n, "packed weights do not match the filter");
  // the chain after the node (Node::then), if any, on the GEMM's rows as it finishes them
  if (ChainHook* h = take_chain(n, &o == &out(g, n) && o.dtype == FP32 && o.quant == Quant::None))
    chain_on_rows(ep, h, OC);
  if (!n.packed.empty()) sgemm_packed(ctx.pool, M, a.cdata(), IC, 1, n.packed[0], o.data.data(), OC, ep);
  else sgemm(ctx.pool, M, OC, IC, a.cdata(), IC, 1, w.data.data(), tw ? OC : 1, tw ? 1 : IC, o.data.data(), OC, ep);
}

void batch_matmul(KernelContext& ctx, Graph& g, Node& n) {
  Value &a = in(g, n, 0), &b = in(g, n, 1), &o = out(g, n);
  if (a.shape.size() < 2 || b.shape.size() < 2) fail(n, "inputs must be at least 2-D");
  bool tb = n.flags & kTransposeWeights;
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t M = a.shape[ra - 2], K = a.shape[ra - 1];
  int64_t Kb = tb ? b.shape[rb - 1] : b.shape[rb - 2], N = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  if (K != Kb) fail(n, "inner dimensions differ: " + shape_str(a.shape) + " x " + shape_str(b.shape));
  int64_t BA = 1, BB = 1;  // the batch sizes: the leading dimensions (no division by an empty matrix's size)
  for (size_t d = 0; d + 2 < ra; d++) BA *= a.shape[d];
  for (size_t d = 0; d + 2 < rb; d++) BB *= b.shape[d];
  if (BA != BB && BB != 1 && BA != 1) fail(n, "batch dimensions do not broadcast");
  int64_t B = std::max(BA, BB);
  std::vector<int64_t> s = BA >= BB ? a.shape : b.shape;
  s[s.size() - 2] = M;
  s[s.size() - 1] = N;
  ensure_shape(o, s);
  const GemmEpilogue ep = epilogue(n, nullptr);
  auto one = [&](ThreadPool* pool, int64_t i) {
    const float* A = a.cdata() + (BA == 1 ? 0 : i) * M * K;
    const float* Bp = b.cdata() + (BB == 1 ? 0 : i) * K * N;
    sgemm(pool, M, N, K, A, K, 1, Bp, tb ? 1 : N, tb ? K : 1, o.data.data() + i * M * N, N, ep);
  };
  // attention's batches of heads: small products, one or more whole products a thread (the
  // GEMM would not split them) when there are enough of them (a decode step's are not worth a
  // thread-pool region: below 64 Ki multiply-adds in all); large ones split inside the GEMM
  if (B > 1 && M * N * K < (int64_t(1) << 21) && B * M * N * K > (int64_t(1) << 16)) {
    parallel(ctx, B, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; i++) one(nullptr, i);
    });
  } else {
    for (int64_t i = 0; i < B; i++) one(ctx.pool, i);
  }
}

void sdpa(Graph& g, Node& n) {
  Value &q = in(g, n, 0), &k = in(g, n, 1), &v = in(g, n, 2), &o = out(g, n);
  Value* scale = opt_in(g, n, 3);
  Value* mask = opt_in(g, n, 4);
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4) fail(n, "expects 4-D query/key/value");
  int64_t B = q.shape[0], Hh = q.shape[1], T = q.shape[2], D = q.shape[3], S = k.shape[2], Dv = v.shape[3];
  if (k.shape[0] != B || k.shape[1] != Hh || k.shape[3] != D || v.shape[0] != B || v.shape[1] != Hh || v.shape[2] != S)
    fail(n, "query/key/value shapes do not agree");
  if ((scale && scale->data.empty()) || (mask && mask->data.empty())) fail(n, "empty scale or mask");
  ensure_shape(o, {B, Hh, T, Dv});
  std::vector<double> sc((size_t)S);
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < Hh; h++) {
      int64_t bh = b * Hh + h;
      for (int64_t t = 0; t < T; t++) {
        const float* qr = &q.data[(bh * T + t) * D];
        double mx = -INFINITY;
        for (int64_t s = 0; s < S; s++) {
          const float* kr = &k.data[(bh * S + s) * D];
          double acc = 0;
          for (int64_t d = 0; d < D; d++) acc += (double)qr[d] * (scale ? scale->data[d % scale->data.size()] : 1.f) * kr[d];
          if (mask) acc += mask->data[(t * S + s) % mask->data.size()];
          sc[s] = acc;
          mx = std::max(mx, acc);
        }
        double sum = 0;
        for (int64_t s = 0; s < S; s++) { sc[s] = std::exp(sc[s] - mx); sum += sc[s]; }
        float* y = &o.data[(bh * T + t) * Dv];
        for (int64_t d = 0; d < Dv; d++) {
          double acc = 0;
          for (int64_t s = 0; s < S; s++) acc += sc[s] * v.data[(bh * S + s) * Dv + d];
          y[d] = (float)(acc / sum);
        }
      }
    }
}


bool prepare_fc_q4w(ThreadPool* pool, const Value* x, Node& n, const Value& w, int64_t IC, int64_t OC, bool tw) {
  // qb4w: blocks along the filter's last dim (its input channels, not transposed), a scale per
  // block; qc4w: one scale a column - one block of all IC input channels (qgemm_qb4 takes any
  // block size: its block sums stay exact int32, |sum| <= IC * 128 * 8 < 2^25, converted to float
  // once, as XNNPACK's qd8-f32-qc4w GEMM converts its whole sum)
  const bool blockwise = w.dtype == QBINT4 && w.quant == Quant::PerChannelGroup && w.group_size > 0;
  const bool channelwise = w.dtype == QCINT4 && w.quant == Quant::PerChannel;
  if (!x || x->dtype != QDINT8 || !(blockwise || channelwise) || tw || w.channel_dim != 0 || IC <= 0 || OC <= 0 ||
      IC > 32768 || w.dims.size() != 2)
    return false;
  const int64_t bs = blockwise ? w.group_size : IC, nb = (IC + bs - 1) / bs;
  if ((int64_t)w.scales.size() < OC * nb || (w.qraw ? w.numel() : (int64_t)w.data.size()) < OC * IC) return false;
  const int64_t row_bytes = (IC + 1) / 2;  // (the program's bytes: two nibbles a byte, low first, zero point 8)
  auto scale = [&](int64_t oc, int64_t b) { return w.scales[(size_t)(oc * nb + b)]; };
  // weight (oc, k) as an int8 value: the nibble itself (what decoding and dividing by the scale
  // gives back), or the decoded value divided by its scale
  auto value = [&](int64_t oc, int64_t k) -> int {
    if (w.qraw) return ((k & 1) ? (w.qraw[oc * row_bytes + k / 2] >> 4) : (w.qraw[oc * row_bytes + k / 2] & 15)) - 8;
    return int8_value(w.data[(size_t)(oc * IC + k)], scale(oc, k / bs));
  };
  // the nibbles themselves, packed as they are (qgemm_qb4.h): from the program's bytes, or from
  // decoded values where each is one (w + 8 in 0..15)
  bool nibbles = kQb4Used && bs <= kQb4MaxBlock;
  if (nibbles && !w.qraw)
    for (int64_t oc = 0; oc < OC && nibbles; oc++)
      for (int64_t k = 0; k < IC && nibbles; k++) {
        const int v = value(oc, k);
        nibbles = v >= -8 && v <= 7;
      }
  if (nibbles && w.qraw) {
    n.qb4 = pack_qb4_bytes(IC, OC, bs, w.qraw, row_bytes, scale, pool);
    return true;
  }
  if (nibbles) {
    n.qb4 = pack_qb4(IC, OC, bs, [&](int64_t k, int64_t oc) { return value(oc, k) + 8; }, scale, pool);
    return true;
  }
  // elsewhere the int8 GEMM: qc4w as qc8w (one int8 panel, XNNPACK's qd8 x qc8w epilogue), qb4w
  // as one int8 panel a block (Node::qblocks)
  std::vector<int8_t> q;
  std::vector<float> s((size_t)OC);
  for (int64_t b = 0; b < nb; b++) {
    const int64_t k0 = b * bs, K = std::min(bs, IC - k0);
    q.assign((size_t)(OC * K), 0);
    for (int64_t oc = 0; oc < OC; oc++) {
      s[(size_t)oc] = scale(oc, b);
      for (int64_t k = 0; k < K; k++) q[(size_t)(oc * K + k)] = (int8_t)value(oc, k0 + k);
    }
    if (channelwise) n.qpacked = pack_q8(K, OC, q.data(), 1, K, s.data(), pool);
    else n.qblocks.push_back(pack_q8(K, OC, q.data(), 1, K, s.data(), pool));
  }
  return true;
}

}  // namespace etnp::xnn
