// Load-time fusion of XNNPACK graph nodes whose intermediate value is read by nothing else:
//  - Convert nodes repeating an earlier Convert of the same value: dropped, their readers reading
//    the first one's output;
//  - any node -> Clamp: the node clamps its own output (its output range narrowed);
//  - Conv2d / FullyConnected -> Add (a residual connection): the GEMM adds the other operand to
//    each output tile while it is in cache, so the intermediate is never written and re-read;
//  - StaticTranspose NCHW -> NHWC -> Conv2d (the network input): the convolution's zero-padded
//    copy of its input is built straight from NCHW;
//  - pointwise Conv2d -> DepthwiseConv2d -> pointwise Conv2d (an inverted-residual block's
//    expansion and projection, either or both): run in bands of rows, so the large intermediate
//    images stay in cache instead of going through memory;
//  - a 1-D Conv2d reading NCHW -> StaticTranspose NHWC -> NCHW (a Conv1d between NCHW-layout
//    nodes): the convolution writes NCHW; then the Add, the unary function (LeakyReLU) and a
//    unary function of a result others read too (a second output) after it, through a reshape;
//  - repeated unary nodes (the same function of the same value): computed once.
// Each fused node keeps the intermediate value so that it can fall back to the two steps
// (xnn_ops.cpp), and its inputs list every value it reads, for the buffer planner.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "delegates/xnnpack/xnn_graph.h"
#include "delegates/xnnpack/xnn_ops.h"
#include "delegates/xnnpack/xnn_conv_rows.h"
#include "delegates/xnnpack/xnn_node_util.h"

namespace etnp::xnn {

std::vector<int> count_readers(const Graph& g) {
  std::vector<int> readers(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (uint32_t id : n.inputs)
      if (id < readers.size()) readers[id]++;
  for (uint32_t id : g.output_ids)
    if (id < readers.size()) readers[id]++;
  return readers;
}

namespace {

struct Uses {
  std::vector<int> readers;     // input slots reading each value (graph outputs count as readers)
  std::vector<int64_t> producer;  // the one node writing each value; -1 none, -2 several
};

Uses count_uses(const Graph& g) {
  Uses u{count_readers(g), std::vector<int64_t>(g.values.size(), -1)};
  for (size_t i = 0; i < g.nodes.size(); i++)
    for (uint32_t id : {g.nodes[i].output, g.nodes[i].output2})
      if (id < g.values.size()) u.producer[id] = u.producer[id] == -1 ? (int64_t)i : -2;
  return u;
}

bool plain_f32(const Value& v) { return v.dtype == FP32 && v.quant == Quant::None && !v.is_constant; }

bool is_graph_io(const Graph& g, uint32_t id) {
  for (uint32_t x : g.input_ids) if (x == id) return true;
  for (uint32_t x : g.output_ids) if (x == id) return true;
  return false;
}

bool static_dims(const Value& v) {
  for (int64_t d : v.dims) if (d < 0) return false;
  return true;
}

// An intermediate that node `from` alone writes and one input slot alone reads.
bool private_link(const Graph& g, const Uses& u, uint32_t id, size_t from) {
  return id < g.values.size() && u.producer[id] == (int64_t)from && u.readers[id] == 1 && !is_graph_io(g, id) &&
         plain_f32(g.values[id]);
}

// The same for the band pipeline, which also snaps static-int8 intermediates to their grids.
bool band_link(const Graph& g, const Uses& u, uint32_t id, size_t from) {
  if (id >= g.values.size() || u.producer[id] != (int64_t)from || u.readers[id] != 1 || is_graph_io(g, id)) return false;
  const Value& v = g.values[id];
  return plain_f32(v) || (!v.is_constant && on_int8_grid(v));
}

// Node i -> Clamp j on its result (static int8 graphs keep ReLU/ReLU6 as separate Clamp nodes):
// node i clamps its own output to the intersection of both ranges and writes the clamp's output.
// For quantized values both must be on the same grid (then snapping before or after the clamp
// gives the same points, the grid's zero being one of them) - or, `requantizing`, on different
// static-int8 grids behind a node that computes its result onto any grid (a convolution, fully
// connected, add, multiply): XNNPACK fuses such a clamp into its producer whatever the
// quantization, the producer then rounding once onto the clamp's grid (a ReLU6 with an observer of
// its own: two roundings, through the producer's grid, give other points). fuse_nodes makes
// those in every fusion mode, the same-grid ones where fusion is on.
bool fuse_clamp_into(Graph& g, const Uses& u, size_t j, bool requantizing) {
  Node& cl = g.nodes[j];
  if (cl.type != Clamp || cl.inputs.size() != 1 || cl.output >= g.values.size()) return false;
  uint32_t x = cl.inputs[0];
  if (x >= g.values.size() || x == cl.output || u.producer[x] < 0 || u.producer[cl.output] != (int64_t)j) return false;
  const size_t i = (size_t)u.producer[x];
  Node& p = g.nodes[i];
  if (i >= j || u.readers[x] != 1 || is_graph_io(g, x) || p.output != x || p.output2 != kInvalidId ||
      p.residual != kInvalidId || p.pre || p.post || p.type == ArgMaxPooling2d)
    return false;
  const Value &vx = g.values[x], &vo = g.values[cl.output];
  if (vx.is_constant || vo.is_constant || vx.dtype != vo.dtype || vx.quant != vo.quant || vx.dims != vo.dims) return false;
  if (vx.quant == Quant::PerTensor) {
    const bool same = vx.scale == vo.scale && vx.zero_point == vo.zero_point;
    const bool onto_any_grid = p.type == Conv2d || p.type == DepthwiseConv2d || p.type == FullyConnected ||
                               p.type == Add || p.type == Multiply;
    if (requantizing ? same || !onto_any_grid || !on_int8_grid(vx) || !(vo.scale > 0.f) : !same) return false;
  } else if (vx.quant != Quant::None || requantizing) {
    return false;
  }
  // nothing before the clamp may read its output (a well-formed graph never does)
  for (size_t k = 0; k < j; k++)
    for (uint32_t id : g.nodes[k].inputs)
      if (id == cl.output) return false;
  p.out_min = std::max(p.out_min, cl.out_min);
  p.out_max = std::min(p.out_max, cl.out_max);
  p.output = cl.output;
  p.clamp_fused = true;
  return true;
}

// Conv2d/FullyConnected i -> Add j. The add's other operand must be ready before i runs.
bool fuse_residual(Graph& g, const Uses& u, size_t j) {
  Node& add = g.nodes[j];
  if (add.type != Add || add.inputs.size() != 2 || add.output >= g.values.size()) return false;
  if (u.producer[add.output] != (int64_t)j || !plain_f32(g.values[add.output])) return false;
  for (int side = 0; side < 2; side++) {
    uint32_t x = add.inputs[side], r = add.inputs[1 - side];
    if (x >= g.values.size() || r >= g.values.size() || x == r) continue;
    int64_t i = u.producer[x];
    if (i < 0 || i >= (int64_t)j) continue;
    Node& mm = g.nodes[(size_t)i];
    if ((mm.type != Conv2d && mm.type != FullyConnected) || mm.residual != kInvalidId || mm.inputs.size() > 3) continue;
    if (!private_link(g, u, x, (size_t)i) || mm.output2 != kInvalidId) continue;
    const Value &vr = g.values[r], &vx = g.values[x], &vo = g.values[add.output];
    if (vr.dtype != FP32 || vr.quant != Quant::None) continue;
    if (u.producer[r] == -2 || u.producer[r] >= i) continue;  // written after the GEMM runs (or twice)
    if (!static_dims(vx) || vx.dims != vr.dims || vx.dims != vo.dims) continue;
    // nothing before the add may read its output (a well-formed graph never does)
    bool early_reader = false;
    for (size_t k = 0; k < j && !early_reader; k++)
      for (uint32_t id : g.nodes[k].inputs) early_reader = early_reader || id == add.output;
    if (early_reader) continue;
    mm.inputs.resize(3, kInvalidId);  // (no bias: an absent third input)
    mm.inputs.push_back(r);
    mm.residual = r;
    mm.unfused = x;
    mm.output = add.output;
    mm.res_min = add.out_min;
    mm.res_max = add.out_max;
    return true;
  }
  return false;
}

// StaticTranspose t (NCHW -> NHWC) -> Conv2d or GlobalAvgPooling2d c reading it as its input (which
// then reads the NCHW value itself). Float32 values; for a global average pool also static-int8
// ones (grid points held as float32, the transpose's input and output on the same grid: a
// transpose moves them as they are, the pool's result is snapped as before).
bool fuse_input_transpose(Graph& g, const Uses& u, size_t t) {
  Node& tr = g.nodes[t];
  if (tr.type != StaticTranspose || tr.inputs.size() != 1 || tr.ints != std::vector<int64_t>{0, 2, 3, 1}) return false;
  uint32_t v = tr.inputs[0], x = tr.output;
  if (v >= g.values.size() || x >= g.values.size() || v == x) return false;  // (v == x: a corrupt graph)
  const Value &vv = g.values[v], &vx = g.values[x];
  const bool f32 = vv.dtype == FP32 && vv.quant == Quant::None;
  const bool grid = on_int8_grid(vv) && same_grid(vv, vx) && !vv.is_constant && !vx.is_constant &&
                    u.producer[x] == (int64_t)t && u.readers[x] == 1 && !is_graph_io(g, x);
  if (!(f32 ? private_link(g, u, x, t) : grid) || vv.dims.size() != 4) return false;
  for (size_t c = t + 1; c < g.nodes.size(); c++) {
    Node& conv = g.nodes[c];
    bool reads = false;
    for (uint32_t id : conv.inputs) reads = reads || id == x;
    if (!reads) continue;
    if ((conv.type != Conv2d && conv.type != GlobalAvgPooling2d) || (conv.type == Conv2d && !f32) ||
        conv.inputs.empty() || conv.inputs[0] != x || conv.nchw_transposed != kInvalidId)
      return false;
    if (conv.output == v) return false;  // (a corrupt graph: the fused node would write what it reads)
    conv.inputs[0] = v;
    conv.nchw_transposed = x;
    return true;
  }
  return false;
}

// Conv2d c -> StaticTranspose t (NHWC -> NCHW) of its result, where c reads an NCHW input (a
// fused input transpose) and is a 1-D convolution conv_nchw_rows can take: c writes the NCHW
// result itself (its register tiles are channel rows: stored as they are, no transpose) - a
// Conv1d between NCHW-layout nodes (ExecuTorch's [N, C, L, 1]: LeakyReLU, adds) needs neither
// of the transposes around it.
bool fuse_output_transpose(Graph& g, const Uses& u, size_t t) {
  const Node& tr = g.nodes[t];
  if (tr.type != StaticTranspose || tr.inputs.size() != 1 || tr.ints != std::vector<int64_t>{0, 3, 1, 2}) return false;
  const uint32_t x = tr.inputs[0], y = tr.output;
  if (x >= g.values.size() || y >= g.values.size() || x == y || u.producer[x] < 0 || u.producer[y] != (int64_t)t)
    return false;
  const size_t c = (size_t)u.producer[x];
  Node& conv = g.nodes[c];
  if (conv.type != Conv2d || conv.nchw_transposed == kInvalidId || conv.nchw_output != kInvalidId ||
      conv.residual != kInvalidId || conv.output2 != kInvalidId || conv.pre || conv.post || conv.output != x ||
      conv.inputs.empty() || conv.inputs[0] >= g.values.size() || conv.inputs[0] == y)
    return false;
  const Value &vx = g.values[x], &vy = g.values[y];
  if (!private_link(g, u, x, c) || !plain_f32(vy) || !static_dims(vx) || vx.dims.size() != 4 ||
      vy.dims != std::vector<int64_t>{vx.dims[0], vx.dims[3], vx.dims[1], vx.dims[2]} ||
      !nchw_rows_candidate(conv, g.values[conv.inputs[0]].dims))
    return false;
  // nothing before the transpose may read its output (a well-formed graph never does)
  for (size_t k = 0; k < t; k++)
    for (uint32_t id : g.nodes[k].inputs)
      if (id == y) return false;
  conv.nchw_output = x;
  conv.output = y;
  return true;
}

// The Conv2d writing NCHW (fuse_output_transpose) whose result node `k` reads as its input x:
// directly, or through a StaticReshape (a Conv1d's [N, C, L, 1] squeezed back to [N, C, L]);
// every value on the way read only there. Its index, and in `via` the reshape's (or -1).
// With `shared`, x itself may have other readers (it is then kept, and the node's function of it
// becomes the convolution's second result).
int64_t nchw_conv_before(const Graph& g, const Uses& u, uint32_t x, int64_t& via, bool shared = false) {
  via = -1;
  if (x >= g.values.size() || u.producer[x] < 0) return -1;
  int64_t p = u.producer[x];
  const Node* n = &g.nodes[(size_t)p];
  if (shared && !plain_f32(g.values[x])) return -1;
  auto link = [&](uint32_t id, size_t from) { return shared && id == x ? true : private_link(g, u, id, from); };
  if (n->type == StaticReshape) {
    if (!link(x, (size_t)p) || n->inputs.size() != 1 || n->output != x) return -1;
    via = p;
    x = n->inputs[0];
    if (x >= g.values.size() || u.producer[x] < 0) return -1;
    p = u.producer[x];
    n = &g.nodes[(size_t)p];
  }
  if (n->type != Conv2d || n->nchw_output == kInvalidId || n->output != x || n->act2 != 0 || n->output2 != kInvalidId ||
      (n->act != 0 && !shared) || !link(x, (size_t)p))
    return -1;
  return p;
}

// Where x reached node k through nchw_conv_before: the convolution (or the reshape after it) now
// writes `to`, the node k's result.
void take_result(Graph& g, int64_t conv, int64_t via, uint32_t to) {
  g.nodes[(size_t)(via >= 0 ? via : conv)].output = to;
}

// Whether value id is read by a node before node j (a well-formed graph never reads a value
// before writing it).
bool read_before(const Graph& g, uint32_t id, size_t j) {
  for (size_t k = 0; k < j; k++)
    for (uint32_t v : g.nodes[k].inputs)
      if (v == id) return true;
  return false;
}

// An Add j of an NCHW-writing convolution's result (nchw_conv_before) and another value of the
// same shape that is ready before the convolution runs: the convolution adds it to each tile.
bool fuse_nchw_residual(Graph& g, const Uses& u, size_t j) {
  const Node& add = g.nodes[j];
  if (add.type != Add || add.inputs.size() != 2 || add.output >= g.values.size() ||
      u.producer[add.output] != (int64_t)j || !plain_f32(g.values[add.output]) || read_before(g, add.output, j))
    return false;
  for (int side = 0; side < 2; side++) {
    const uint32_t x = add.inputs[side], r = add.inputs[1 - side];
    if (x == r || r >= g.values.size()) continue;
    int64_t via;
    const int64_t c = nchw_conv_before(g, u, x, via);
    if (c < 0 || c >= (int64_t)j) continue;
    Node& conv = g.nodes[(size_t)c];
    const Value &vx = g.values[x], &vr = g.values[r], &vo = g.values[add.output];
    // (a second residual: a sum of residual blocks' results, its first block's ready before)
    const bool second = conv.residual != kInvalidId;
    if (conv.residual2 != kInvalidId || (second ? conv.inputs.size() != 4 : conv.inputs.size() > 3) ||
        vr.dtype != FP32 || vr.quant != Quant::None || vr.as_codes || u.producer[r] == -2 || u.producer[r] >= c ||
        !static_dims(vx) || vr.dims != vx.dims || vo.dims != vx.dims || r == conv.output || r == conv.nchw_output)
      continue;
    conv.inputs.resize(second ? 4 : 3, kInvalidId);  // (no bias: an absent third input)
    conv.inputs.push_back(r);
    (second ? conv.residual2 : conv.residual) = r;
    (second ? conv.res2_min : conv.res_min) = add.out_min;
    (second ? conv.res2_max : conv.res_max) = add.out_max;
    take_result(g, c, via, add.output);
    return true;
  }
  return false;
}

// Node k is a unary elementwise function (LeakyReLU, Tanh, ...; not a clamp or copy, no clamp of
// its own) that alone writes its result, which nothing before it reads.
bool fusable_unary(const Graph& g, const Uses& u, size_t k) {
  const Node& f = g.nodes[k];
  return unary_op(f.type) && f.type != Clamp && f.type != Copy && f.type != Convert && f.inputs.size() == 1 &&
         f.output < g.values.size() && u.producer[f.output] == (int64_t)k && !std::isfinite(f.out_min) &&
         !std::isfinite(f.out_max) && !read_before(g, f.output, k);
}

// A unary elementwise node k (LeakyReLU, Tanh, ...; no clamp of its own) on an NCHW-writing
// convolution's result: the convolution applies the function as it stores each tile.
bool fuse_nchw_unary(Graph& g, const Uses& u, size_t k) {
  const Node& f = g.nodes[k];
  if (!fusable_unary(g, u, k)) return false;
  const uint32_t x = f.inputs[0];
  int64_t via;
  const int64_t c = nchw_conv_before(g, u, x, via);
  if (c < 0 || c >= (int64_t)k) return false;
  const Value &vx = g.values[x], &vo = g.values[f.output];
  if (!plain_f32(vo) || vo.dims != vx.dims || !static_dims(vx)) return false;
  Node& conv = g.nodes[(size_t)c];
  conv.act = f.type;
  conv.act_param = f.fparam;
  take_result(g, c, via, f.output);
  return true;
}

// The same where the unary node's input has other readers too (a residual sum that the next
// residual add also reads): the convolution writes the function's result as its second output.
bool fuse_nchw_unary_copy(Graph& g, const Uses& u, size_t k) {
  const Node& f = g.nodes[k];
  if (!fusable_unary(g, u, k)) return false;
  const uint32_t x = f.inputs[0];
  int64_t via;
  const int64_t c = nchw_conv_before(g, u, x, via, true);
  if (c < 0 || c >= (int64_t)k) return false;
  Node& conv = g.nodes[(size_t)c];
  const Value &vx = g.values[x], &vo = g.values[f.output];
  if (!plain_f32(vo) || vo.dims != vx.dims || !static_dims(vx) || f.output == conv.output || f.output == conv.residual)
    return false;
  for (uint32_t id : conv.inputs)
    if (id == f.output) return false;
  conv.output2 = f.output;
  conv.act2 = f.type;
  conv.act2_param = f.fparam;
  return true;
}

// Band pipelines pay where the intermediate image is not small: above ~1 MiB it would leave the
// per-core cache, and from a few hundred KiB the saved passes and thread hand-offs still win
// (MobileNetV2 at 2 threads: 200 KiB measured 2% faster than 1 MiB). Below, finer work splits
// than one share a thread serve better.
bool worth_banding(const Value& v) {
  const std::vector<int64_t>& d = v.dims;
  return d.size() == 4 && static_dims(v) && d[1] * d[2] * d[3] * 4 >= (int64_t(200) << 10);
}

bool packed_pointwise(const Node& c) {
  return c.type == Conv2d && c.kh == 1 && c.kw == 1 && c.sh == 1 && c.sw == 1 && !c.pad_top && !c.pad_left &&
         !c.pad_bottom && !c.pad_right && c.groups == 1 && c.packed.size() == 1 && c.nchw_transposed == kInvalidId &&
         c.output2 == kInvalidId && !c.inputs.empty();
}

// Pointwise Conv2d i (packed weights) -> DepthwiseConv2d reading its result: the depthwise node
// takes the convolution as `pre` and runs both in bands of rows (xnn_expand_depthwise.cpp).
bool fuse_expand_depthwise(Graph& g, const Uses& u, size_t i) {
  Node& pc = g.nodes[i];
  if (!packed_pointwise(pc) || pc.residual != kInvalidId || pc.inputs.size() > 3) return false;
  uint32_t e = pc.output, x = pc.inputs[0];
  if (x >= g.values.size() || u.producer[x] == -2 || !band_link(g, u, e, i) || g.values[e].dims.size() != 4 ||
      !static_dims(g.values[e]))
    return false;  // (the input is read later than before: it must not be written twice)
  if (!worth_banding(g.values[e])) return false;
  for (size_t j = i + 1; j < g.nodes.size(); j++) {
    Node& dw = g.nodes[j];
    bool reads = false;
    for (uint32_t id : dw.inputs) reads = reads || id == e;
    if (!reads) continue;
    // (a static-int8 depthwise node with its int8 filter runs on int8 codes, as the int8
    // convolutions around it do: the band pipeline's float32 steps would be slower)
    if (dw.type != DepthwiseConv2d || dw.inputs.size() < 2 || dw.inputs.size() > 3 || dw.inputs[0] != e || dw.pre ||
        dw.post || dw.qdw.taps > 0)
      return false;
    const Value& w = g.values[dw.inputs[1]];
    if (!w.is_constant || w.dims.size() != 4 || w.dims[3] != g.values[e].dims[3]) return false;  // multiplier 1
    dw.inputs.resize(3, kInvalidId);
    dw.inputs.push_back(x);
    dw.pre = std::make_shared<Node>(std::move(pc));
    return true;
  }
  return false;
}

// DepthwiseConv2d -> pointwise Conv2d k reading its result (an inverted-residual block's
// projection, with its residual add when that was fused): the depthwise node takes the
// convolution as `post`, and each band of depthwise rows is projected while in cache.
bool fuse_project(Graph& g, const Uses& u, size_t k) {
  Node& pc = g.nodes[k];
  if (!packed_pointwise(pc)) return false;
  uint32_t d = pc.inputs[0];
  if (d >= g.values.size() || u.producer[d] < 0) return false;
  const size_t j = (size_t)u.producer[d];
  Node& dw = g.nodes[j];
  if (dw.type != DepthwiseConv2d || dw.post || !band_link(g, u, d, j) || !worth_banding(g.values[d]) ||
      dw.inputs.size() < 2 || dw.qdw.taps > 0)
    return false;
  const Value& w = g.values[dw.inputs[1]];
  if (!w.is_constant || w.dims.size() != 4 || w.dims[3] != g.values[d].dims[3]) return false;  // multiplier 1
  if (pc.residual != kInvalidId && (u.producer[pc.residual] == -2 || u.producer[pc.residual] >= (int64_t)j))
    return false;  // not ready before j (or written twice)
  dw.inputs.resize(std::max<size_t>(dw.inputs.size(), 3), kInvalidId);
  if (pc.residual != kInvalidId) dw.inputs.push_back(pc.residual);
  dw.output = pc.output;
  dw.post = std::make_shared<Node>(std::move(pc));
  return true;
}

// Two values of one type
bool same_type(const Value& a, const Value& b) {
  return a.dtype == b.dtype && a.dims == b.dims && a.flags == b.flags && a.quant == b.quant && a.scale == b.scale &&
         a.zero_point == b.zero_point && a.scales == b.scales && a.channel_dim == b.channel_dim &&
         a.group_size == b.group_size && a.nonbatch_dims == b.nonbatch_dims && !a.is_constant && !b.is_constant;
}
bool plain_convert(const Graph& g, const Node& n) {
  return n.type == Convert && n.inputs.size() == 1 && n.output < g.values.size() && n.output2 == kInvalidId &&
         !is_graph_io(g, n.output) && !n.clamp_fused && n.out_min == -std::numeric_limits<float>::infinity() &&
         n.out_max == std::numeric_limits<float>::infinity();
}
// Earlier node i computes what node k computes:
// - two Converts of one input into outputs of one type (a program converts a linear's input once a
//   linear: the q, k and v projections of one normalised input, the gate and up projections, three
//   and two identical dynamic quantizations);
// - two unary functions (same function and parameter, no clamp) of one float value (a LeakyReLU
//   that each residual block of a vocoder stage applies to the stage's input).
bool repeats(const Graph& g, const Uses& u, size_t i, size_t k) {
  const Node &e = g.nodes[i], &n = g.nodes[k];
  if (e.type != n.type || e.inputs != n.inputs) return false;
  if (n.type == Convert)
    return plain_convert(g, e) && e.flags == n.flags && same_type(g.values[e.output], g.values[n.output]);
  const uint32_t x = n.inputs[0];
  const Value &ve = g.values[e.output], &vn = g.values[n.output];
  return std::memcmp(&e.fparam, &n.fparam, sizeof(float)) == 0 && fusable_unary(g, u, i) && e.output != x &&
         u.producer[x] <= (int64_t)i && ve.dims == vn.dims && plain_f32(ve) && plain_f32(vn);
}
// Node k repeats an earlier node's work (repeats): k's readers read the earlier output instead, and
// k is dropped.
bool merge_repeat(Graph& g, const Uses& u, size_t k) {
  const Node& n = g.nodes[k];
  if (n.type == Convert) {
    if (!plain_convert(g, n)) return false;
  } else {
    if (!fusable_unary(g, u, k)) return false;
    const uint32_t x = n.inputs[0];
    if (x >= g.values.size() || u.producer[x] == -2 || is_graph_io(g, n.output) || is_graph_io(g, x)) return false;
  }
  for (size_t i = 0; i < k; i++) {
    if (!repeats(g, u, i, k)) continue;
    const uint32_t from = n.output, to = g.nodes[i].output;
    for (Node& r : g.nodes)
      for (uint32_t& id : r.inputs)
        if (id == from) id = to;
    return true;
  }
  return false;
}

// One pass of `fuse` over the nodes; the nodes it absorbs are dropped.
template <typename F>
void fuse_pass(Graph& g, F fuse) {
  std::vector<bool> drop(g.nodes.size(), false);
  bool any = false;
  for (size_t k = 0; k < g.nodes.size(); k++) {
    Uses u = count_uses(g);  // small graphs; recounted after each change
    if (fuse(g, u, k)) {
      drop[k] = true;
      g.nodes[k].inputs.clear();  // no longer a reader
      g.nodes[k].output = kInvalidId;
      any = true;
    }
  }
  if (!any) return;
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); k++)
    if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
  g.nodes.swap(kept);
}

}  // namespace

FusionMode fusion_mode() {
  static const FusionMode mode = [] {
    const char* v = std::getenv("ETNP_XNN_FUSION");
    if (v && std::strcmp(v, "off") == 0) return FusionMode::Off;
    if (v && std::strcmp(v, "steps") == 0) return FusionMode::Steps;
    return FusionMode::On;
  }();
  return mode;
}

void fuse_nodes(Graph& g) {
  // (XNNPACK's own rewrite: the graph's meaning, in every mode)
  fuse_pass(g, [](Graph& gg, const Uses& u, size_t k) { return fuse_clamp_into(gg, u, k, true); });
  if (fusion_mode() == FusionMode::Off) return;
  // repeats first (the fusions below see the merged readers)
  fuse_pass(g, merge_repeat);
  fuse_pass(g, [](Graph& gg, const Uses& u, size_t k) { return fuse_clamp_into(gg, u, k, false); });
  // residual adds first: a projection takes its add along when it joins a depthwise node
  fuse_pass(g, [](Graph& gg, const Uses& u, size_t k) { return fuse_residual(gg, u, k) || fuse_input_transpose(gg, u, k); });
  fuse_pass(g, fuse_expand_depthwise);
  fuse_pass(g, fuse_project);
  // 1-D convolutions between NCHW-layout nodes: the output transpose, then an add and a function after
  fuse_pass(g, fuse_output_transpose);
  fuse_pass(g, fuse_nchw_residual);
  fuse_pass(g, fuse_nchw_unary);
  fuse_pass(g, fuse_nchw_unary_copy);
}

std::string node_display_name(const Node& n) {
  std::string s = node_type_name(n.type);
  if (n.nchw_transposed != kInvalidId) s = "XNNStaticTranspose+" + s.substr(3);
  if (n.clamp_fused) s += "+Clamp";
  if (n.nchw_output != kInvalidId) s += "+StaticTranspose";
  if (n.residual != kInvalidId) s += "+Add";
  if (n.residual2 != kInvalidId) s += "+Add";
  if (n.act) s += std::string("+") + std::string(node_type_name(n.act)).substr(3);
  if (n.act2) s += std::string("+(") + std::string(node_type_name(n.act2)).substr(3) + ")";
  if (n.pre) s = node_display_name(*n.pre) + "+" + s.substr(3);
  if (n.post) s += "+" + node_display_name(*n.post).substr(3);
  return s;
}

}  // namespace etnp::xnn
