// XNNPACK's requantization of static-int8 Conv2d, FullyConnected and DepthwiseConv2d nodes, planned
// at method load so that their results are the reference runtime's bit for bit.
//
// XNNPACK computes a static-int8 output code as the int32 sum of (input code - input zero point)
// x filter value plus the program's int32 bias, converted to float32 and multiplied by one scale
// per output channel, input scale * filter scale / output scale (float32, in that order, made once
// when it creates the operator), then clamped and rounded to nearest even, plus the output zero
// point. Our kernels' own epilogue - sa * sw * sum + float bias, then times 1 / output scale - is
// the same value within rounding, and a quantization step apart wherever a result lies next to a
// half step (measured: 3-44 of the 100 logits of the zoo's static-int8 CNNs differed from the
// reference's). Planned here: views of the node's packed weights (the same int8 panels) with those
// scales and the integer biases (PackedQ8::bias_q, PackedDwQ8::bias_q); the kernels run them with
// the activations' scale 1, no float bias, the clamp and the output grid in grid units
// (xnn_static_q8.cpp: q8_params).
#include <cmath>

#include "delegates/xnnpack/xnn_node_util.h"

namespace etnp::xnn {
namespace {

// The int32 biases of node n's OC output channels (0 without a bias), or false where its bias is
// not the program's integers (a float32 bias: then the node keeps its own epilogue).
bool int_biases(const Graph& g, const Node& n, int64_t OC, std::vector<int32_t>& b) {
  b.assign((size_t)OC, 0);
  if (n.inputs.size() < 3 || n.inputs[2] == kInvalidId) return true;
  if (n.inputs[2] >= g.values.size()) return false;
  const Value& v = g.values[n.inputs[2]];
  if (!v.is_constant || (v.dtype != QINT32 && v.dtype != QCINT32) || (int64_t)v.ints.size() < OC) return false;
  std::copy(v.ints.begin(), v.ints.begin() + OC, b.begin());
  return true;
}

// The requantization scales sx * sw[c] / so and the biases b[c] of n channels into scale / bias_q,
// sized as the packing's padded scales sw (zeros past the n, as the packing pads)
void requant_columns(const PackedArray<float>& sw, int64_t n, float sx, float so, const int32_t* b,
                     PackedArray<float>& scale, PackedArray<int32_t>& bias_q) {
  scale.assign(sw.size(), 0.f);
  bias_q.assign(sw.size(), 0);
  for (int64_t c = 0; c < n && c < (int64_t)sw.size(); c++) {
    scale[(size_t)c] = sx * sw[(size_t)c] / so;
    bias_q[(size_t)c] = b[c];
  }
}

// A view of p's panels with the requantization scales and biases of its columns (requant_columns)
PackedQ8 requant_view(const PackedQ8& p, float sx, float so, const int32_t* b) {
  PackedQ8 v;
  v.K = p.K, v.N = p.N, v.Kp = p.Kp, v.pairs = p.pairs, v.columns = p.columns;
  v.data.set_view(p.data.data(), p.data.size());
  v.col_sum.set_view(p.col_sum.data(), p.col_sum.size());
  requant_columns(p.scale, p.N, sx, so, b, v.scale, v.bias_q);
  return v;
}

}  // namespace

void plan_exact_requant(const Graph& g, Node& n) {
  n.qexact.clear();
  n.qdw_exact = PackedDwQ8();
  const size_t nv = g.values.size();
  const bool dw = n.type == DepthwiseConv2d && n.qdw.taps > 0;
  const bool packed = (n.type == Conv2d && !n.qconv.empty()) || (n.type == FullyConnected && n.qpacked.N > 0);
  // (the kernels write the node's own output: no fused part, no residual add after)
  if ((!dw && !packed) || n.inputs.size() < 2 || n.inputs[0] >= nv || n.inputs[1] >= nv || n.output >= nv ||
      n.pre || n.post || n.residual != kInvalidId || n.residual2 != kInvalidId)
    return;
  const Value &x = g.values[n.inputs[0]], &w = g.values[n.inputs[1]], &o = g.values[n.output];
  auto grid = [](const Value& v) { return on_int8_grid(v) && v.scale > 0.f && std::isfinite(v.scale); };
  // (a 4-bit filter widened to int8 has XNNPACK kernels of its own: not claimed here)
  if (!grid(x) || !grid(o) || (w.dtype != QCINT8 && w.dtype != QINT8)) return;
  const float sx = x.scale, so = o.scale;
  std::vector<int32_t> b;
  if (dw) {
    const PackedDwQ8& q = n.qdw;
    if (!int_biases(g, n, q.C, b)) return;
    PackedDwQ8& v = n.qdw_exact;
    v.taps = q.taps, v.C = q.C;
    v.w.set_view(q.w.data(), q.w.size());
    requant_columns(q.scale, q.C, sx, so, b.data(), v.scale, v.bias_q);
    return;
  }
  if (n.type == FullyConnected) {
    if (!int_biases(g, n, n.qpacked.N, b)) return;
    n.qexact.push_back(requant_view(n.qpacked, sx, so, b.data()));
    return;
  }
  // per group (OCg columns each from gi * OCg), or one packing of all groups' columns
  int64_t OC = 0;
  for (const PackedQ8& p : n.qconv) OC += p.N;
  if (!int_biases(g, n, OC, b)) return;
  int64_t c0 = 0;
  for (const PackedQ8& p : n.qconv) {
    n.qexact.push_back(requant_view(p, sx, so, b.data() + c0));
    c0 += p.N;
  }
}

}  // namespace etnp::xnn
