// Static-int8 Conv2d and FullyConnected in integer arithmetic: an input on a per-tensor int8 grid
// (qs8 / qu8) times an int8 filter (per-channel qc8w or per-tensor qs8, zero point 0), accumulated exactly in int32
// by the int8 GEMM (kernels/compute/qgemm.h), scaled back to float with the bias and clamp and snapped to
// the output's grid in the GEMM's epilogue (static-int8 values are kept as grid points). The float
// path computes the same sums in float32 (rounding each product sum); here they are exact, as
// in XNNPACK. Inputs become their codes once (q + 128 for qs8, q for qu8); KxK convolutions
// unfold blocks of output pixels into per-thread byte rows (the spatial padding is the code of 0,
// i.e. the zero point), multiplied right away.
// A value written by one of these nodes and read only by them (Value::as_codes, planned by the
// executor) is kept as its byte codes alone: the GEMM's epilogue writes them, the next node reads
// them as its rows - no float32 copy between two int8 layers.
#include "delegates/xnnpack/xnn_node_util.h"
#include "delegates/xnnpack/xnn_chain.h"
#include "delegates/xnnpack/xnn_im2col.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kernels/compute/add_q8.h"
#include "kernels/compute/gemm_tasks.h"
#include "kernels/kernel_util.h"
#include "kernels/compute/qgemm.h"
#include "kernels/compute/quantize_row.h"
#include "os/thread_slot.h"

namespace etnp::xnn {

// ETNP_XNN_INT8=off keeps static-int8 convolutions on the float path (for comparisons)
static bool int8_convs_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("ETNP_XNN_INT8");
    return !(v && std::strcmp(v, "off") == 0);
  }();
  return on;
}

namespace {

// The int8 values and per-output-channel scales of a static-int8 filter of OC x K values whose
// output channel is dimension `oc_dim` of its 2-D view (0: [OC, K], 1: [K, OC]) and dimension
// `quant_dim` of the filter itself; false unless it is per-channel qc8w or per-tensor qs8, zero
// point 0 (or per-channel qc4w: its nibbles widened to int8 values - twice the program's bytes,
// a quarter of a float copy), and the sums cannot overflow.
bool int8_filter(const Value& w, int64_t OC, int64_t K, int oc_dim, int quant_dim, Int8Values& q,
                 std::vector<float>& scales) {
  // int32 sums of up to 32768 products of 255 * 128 (and the zero-point term) cannot overflow
  // (qc4w: nibbles with the implicit zero point 8, whatever the value's zero point says; each of
  // the OC rows of K nibbles padded to whole bytes, so only as [OC, K])
  const bool qc4w = w.dtype == QCINT4 && oc_dim == 0 && w.dims.size() == 2 && w.dims[1] == K;
  if (!int8_convs_enabled() || (w.zero_point != 0 && !qc4w) || K <= 0 || OC <= 0 || K > 32768 ||
      (w.qraw ? w.numel() : (int64_t)w.data.size()) < OC * K)
    return false;
  scales.resize((size_t)OC);
  if ((w.dtype == QCINT8 || qc4w) && w.quant == Quant::PerChannel && w.channel_dim == quant_dim &&
      (int64_t)w.scales.size() >= OC)
    std::copy(w.scales.begin(), w.scales.begin() + OC, scales.begin());
  else if (w.dtype == QINT8 && w.quant == Quant::PerTensor)
    std::fill(scales.begin(), scales.end(), w.scale);
  else
    return false;
  filter_int8_values(w, OC, K, oc_dim, scales.data(), q);
  return true;
}

bool int8_input(const Value* x) { return x && on_int8_grid(*x) && x->scale > 0.f && std::isfinite(x->scale); }

// The GEMM's zero point for a value's byte codes: value = (u8 - 128 - zpa) * scale, u8 = t + zp
// (+ 128 for qs8), t = x / scale an integer on the grid.
int32_t codes_zero_point(const Value& a) { return a.dtype == QINT8 ? a.zero_point : a.zero_point - 128; }
// The byte code of 0 (the shift of a value's codes: value = (code - zero_code) * scale)
int32_t zero_code(const Value& a) { return codes_zero_point(a) + 128; }

// per-row quantisation parameters of the GEMM: one per-tensor pair repeated `rows` times
QActivations repeated_params(float scale, int32_t zpa, int64_t rows, std::vector<float>& s, std::vector<int32_t>& z) {
  s.assign((size_t)rows, scale);
  z.assign((size_t)rows, zpa);
  QActivations qa;
  qa.scale = s.data();
  qa.zero_point = z.data();
  qa.uniform = true;
  return qa;
}

// Where the GEMM writes a node's output o: float32, snapped to o's grid when the node's own
// output (not a fused one) is on a per-tensor int8 grid - the GEMM then finishes its results
// itself and run_node skips finalize_value (Node::snapped) - or only o's byte codes (Value::as_codes).
// `at(i)`: the same from element i on.
struct OutputRows {
  QOutput q;
  Int8Grid grid;
  OutputRows(Value& o, int64_t ldc) {
    q.ldc = ldc;
    if (on_int8_grid(o) && o.scale > 0.f) {
      grid = grid_of(o);
      q.grid = &grid;
    }
    if (o.as_codes && q.grid) {
      o.q8.resize((size_t)(o.numel() + kDwQ8CodeSlack));  // (the depthwise kernel reads past the end)
      q.codes = o.q8.data();
      q.code_shift = zero_code(o);
    } else {
      q.C = o.data.data();
    }
  }
  OutputRows(const OutputRows&) = delete;
  QOutput at(int64_t i) const {
    QOutput r = q;
    if (r.codes) r.codes += i;
    else r.C += i;
    return r;
  }
  bool finished() const { return q.grid != nullptr; }
};

// What a static-int8 node's kernels run with: XNNPACK's requantization (xnn_requant.cpp) where it
// is planned (`planned`: Node::qexact / qdw_exact) and the output is on its grid - activations'
// scale 1, no float bias, the clamp in grid units and results in grid units (out's grid made inv
// 1) - else the input's scale, the float bias and the node's clamp.
struct Q8Params {
  float sa;
  const float* bias;
  float lo, hi;
  bool exact;
};
Q8Params q8_params(const Node& n, const Value& a, const float* bias, OutputRows& out, bool planned) {
  if (!planned || !out.q.grid) return {a.scale, bias, n.out_min, n.out_max, false};
  const float inv = out.grid.inv;
  out.grid.inv = 1.f;
  return {1.f, nullptr, n.out_min * inv, n.out_max * inv, true};
}

}  // namespace

void prepare_conv_q8(ThreadPool* pool, const Value* x, Node& n, const Value& w) {
  const int64_t G = n.groups, OCg = n.group_out, K = (int64_t)n.kh * n.kw * n.group_in;
  Int8Values q;
  std::vector<float> scales;
  if (!int8_input(x) || !int8_filter(w, G * OCg, K, 0, 0, q, scales)) return;
  // filter [OC, KH, KW, ICg]: B(k, oc) = q[oc * K + k]
  if (G > 1) {  // small groups several to a panel, where the kernel runs here
    PackedQ8 all = pack_q8(K, G * OCg, q.data(), 1, K, scales.data(), pool);
    if (qgemm_q8_grouped_ok(all, (int64_t)n.kh * n.kw, n.group_in, OCg)) {
      n.qconv.push_back(std::move(all));
      n.qconv_grouped = true;
      return;
    }
  }
  for (int64_t gi = 0; gi < G; gi++)
    n.qconv.push_back(pack_q8(K, OCg, q.data() + gi * OCg * K, 1, K, scales.data() + gi * OCg, pool));
}

bool prepare_fc_q8(ThreadPool* pool, const Value* x, Node& n, const Value& w, int64_t IC, int64_t OC, bool tw) {
  Int8Values q;
  std::vector<float> scales;
  if (!int8_input(x) || !int8_filter(w, OC, IC, tw ? 1 : 0, tw ? 1 : 0, q, scales)) return false;
  n.qpacked = pack_q8(IC, OC, q.data(), tw ? OC : 1, tw ? 1 : IC, scales.data(), pool);
  return true;
}

void prepare_dw_q8(const Value* x, Node& n, const Value& w) {
  const int64_t taps = (int64_t)n.kh * n.kw;
  if (w.dims.size() != 4 || w.dims[0] != 1 || w.dims[1] != n.kh || w.dims[2] != n.kw || taps > kMaxDwQ8Taps) return;
  const int64_t C = w.dims[3];
  if (!int8_input(x) || x->dims.size() != 4 || x->dims[3] != C) return;  // (channel multiplier 1)
  Int8Values q;
  std::vector<float> scales;
  // filter [1, KH, KW, C]: its [taps, C] view, per-channel scales along dimension 3
  if (!int8_filter(w, C, taps, 1, 3, q, scales)) return;
  n.qdw = pack_dw_q8(taps, C, q.data(), scales.data());
}

bool depthwise_q8_rows(KernelContext& ctx, Node& n, const Value& a, const DepthwiseGeom& dg, const float* bias,
                       Value& o, Scratch& sc, ChainHook* then) {
  if (n.qdw.taps != dg.KH * dg.KW || n.qdw.C != dg.C || !on_int8_grid(a) || !(a.scale > 0.f)) return false;
  if (!on_int8_grid(o) && !(o.dtype == FP32 && o.quant == Quant::None)) return false;  // (finalize_value's work)
  DwQ8Input x;
  x.pad_code = zero_code(a);
  if (x.pad_code < 0 || x.pad_code > 255) return false;  // (a zero point outside the datatype's range)
  int32_t zpa;
  x.codes = value_codes(ctx, n, a, dg.N * dg.H * dg.W * dg.C, sc.q8, zpa);
  OutputRows out(o, dg.C);
  const Q8Params pr = q8_params(n, a, bias, out, n.qdw_exact.taps > 0);
  const PackedDwQ8& qdw = pr.exact ? n.qdw_exact : n.qdw;
  x.scale = pr.sa;
  DepthwiseGeom g = dg;
  g.lo = pr.lo, g.hi = pr.hi;
  n.snapped = true;  // (clamped, and snapped or written as codes, or plain float32)
  // output rows across threads; below 64 Ki multiply-adds in all a region costs more than it saves
  const int64_t rows = dg.N * dg.OH, row_len = dg.OW * dg.C;
  const int64_t grain = rows * row_len * n.qdw.taps < (int64_t(1) << 16) ? rows : 1;
  parallel(ctx, rows, grain, [&](int64_t b, int64_t e) {
    depthwise_q8(g, x, qdw, pr.bias, out.q, b, e);
    if (then) then->run.run(b * row_len, e * row_len);
  });
  return true;
}

const uint8_t* value_codes(KernelContext& ctx, const Node& n, const Value& a, int64_t total, std::vector<uint8_t>& buf,
                           int32_t& zpa) {
  zpa = codes_zero_point(a);
  if (a.as_codes) {  // (their writers leave the slack too: OutputRows, output_codes)
    if ((int64_t)a.q8.size() < total + kDwQ8CodeSlack) fail(n, "int8 input codes missing (corrupt program?)");
    return a.q8.data();
  }
  const float inv = 1.f / a.scale, shift = (float)(zpa + 128);
  buf.resize((size_t)(total + kDwQ8CodeSlack));  // (the depthwise kernel reads past the end)
  uint8_t* codes = buf.data();
  const float* X = a.cdata();
  parallel(ctx, total, 1 << 16, [&](int64_t b, int64_t e) { float_to_codes(X + b, e - b, inv, shift, codes + b); });
  return codes;
}

uint8_t* output_codes(Value& o, std::vector<uint8_t>& buf) {
  std::vector<uint8_t>& c = o.as_codes ? o.q8 : buf;
  c.resize((size_t)(o.numel() + kDwQ8CodeSlack));  // (the depthwise kernel reads past the end)
  return c.data();
}

// d[i] = the grid point of codes[i] on static-int8 value v's grid
static void grid_points(KernelContext& ctx, const Value& v, const uint8_t* codes, float* d, int64_t total) {
  const int32_t shift = zero_code(v);
  const float scale = v.scale;
  parallel(ctx, total, 1 << 16, [&](int64_t b, int64_t e) { codes_to_floats(codes + b, e - b, shift, scale, d + b); });
}

void codes_to_values(KernelContext& ctx, Value& o, const uint8_t* codes) {
  grid_points(ctx, o, codes, o.data.data(), o.numel());
}

bool int8_moves(const Graph& g, const Node& n) {
  switch (n.type) {
    case MaxPooling2d: case Concatenate2: case Concatenate3: case Concatenate4: case Concatenate5:
    case StaticTranspose: case StaticReshape: break;
    default: return false;
  }
  if (n.output >= g.values.size() || n.output2 != kInvalidId || n.pre || n.post) return false;
  for (uint32_t id : n.inputs)
    if (id >= g.values.size() || id == n.output) return false;
  return moves_grid_points(g, n) && g.values[n.output].scale > 0.f;
}

bool int8_convert(const Graph& g, const Node& n) {
  const size_t nv = g.values.size();
  if (n.type != Convert || n.inputs.size() != 1 || n.inputs[0] >= nv || n.output >= nv || n.inputs[0] == n.output ||
      n.output2 != kInvalidId || n.pre || n.post || std::isfinite(n.out_min) || std::isfinite(n.out_max))
    return false;
  auto plain = [](const Value& v) { return v.dtype == FP32 && v.quant == Quant::None; };
  auto grid = [](const Value& v) { return on_int8_grid(v) && v.scale > 0.f && std::isfinite(v.scale); };
  const Value &a = g.values[n.inputs[0]], &o = g.values[n.output];
  return (plain(a) && grid(o)) || (grid(a) && plain(o));
}

bool convert_codes(KernelContext& ctx, Graph& g, Node& n) {
  const Value& a = in(g, n, 0);  // (its codes or its floats: as many as its shape holds, or fail)
  Value& o = g.values[n.output];
  if (!a.as_codes && !o.as_codes) return false;
  if (!int8_convert(g, n) || (a.as_codes && o.as_codes)) fail(n, "int8 codes on a conversion that cannot take them");  // (the plan rules it out)
  ensure_shape(o, a.shape);
  const int64_t total = o.numel();
  n.snapped = true;  // (codes, or the float32 values of codes)
  if (o.as_codes) {  // float32 -> the codes of its snapped values (grid_code: finalize_value's rounding)
    uint8_t* y = output_codes(o, o.q8);
    const float* x = a.cdata();
    const Int8Grid grid = grid_of(o);
    const int32_t shift = zero_code(o);
    parallel(ctx, total, 1 << 16, [&](int64_t b, int64_t e) { grid_codes(grid, shift, x + b, y + b, e - b); });
    return true;
  }
  if ((int64_t)a.q8.size() < total) fail(n, "int8 input codes missing (corrupt program?)");
  grid_points(ctx, a, a.q8.data(), o.data.data(), total);
  return true;
}

bool codes_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("ETNP_XNN_CODES");
    return !(v && std::strcmp(v, "off") == 0);
  }();
  return on;
}

bool int8_add(const Graph& g, const Node& n) {
  const size_t nv = g.values.size();
  if (n.type != Add || n.inputs.size() != 2 || n.output >= nv || n.output2 != kInvalidId ||
      n.pre || n.post || n.residual != kInvalidId || n.nchw_transposed != kInvalidId)
    return false;
  const Value& o = g.values[n.output];
  for (uint32_t id : {n.inputs[0], n.inputs[1], n.output}) {
    if (id >= nv) return false;
    const Value& v = g.values[id];
    if (!on_int8_grid(v) || !(v.scale > 0.f) || v.dims != o.dims) return false;
  }
  return n.inputs[0] != n.output && n.inputs[1] != n.output;
}

bool int8_mul(const Graph& g, const Node& n) {
  const size_t nv = g.values.size();
  if (n.type != Multiply || n.inputs.size() != 2 || n.output >= nv || n.output2 != kInvalidId || n.pre || n.post ||
      n.residual != kInvalidId || n.nchw_transposed != kInvalidId)
    return false;
  for (uint32_t id : {n.inputs[0], n.inputs[1], n.output})
    if (id >= nv || !on_int8_grid(g.values[id]) || !(g.values[id].scale > 0.f) || !std::isfinite(g.values[id].scale))
      return false;
  return n.inputs[0] != n.output && n.inputs[1] != n.output;
}

MulRequant mul_q8_requant(const Graph& g, const Node& n) {
  const Value &a = g.values[n.inputs[0]], &b = g.values[n.inputs[1]], &o = g.values[n.output];
  const float inv_ab = 1.f / (a.scale * b.scale), scale = a.scale * b.scale / o.scale;  // (XNNPACK's, in this order)
  const Int8Grid grid = grid_of(o);
  float lo, hi;  // the clamp in grid units, and the grid's (q8_bounds)
  QOutput q;
  q.grid = &grid;
  q8_bounds(q, n.out_min, n.out_max, lo, hi);
  return {{inv_ab, -0x1.0p+22f, 0x1.0p+22f, 1.f}, {scale, lo, hi, grid.scale}};
}

bool add_q8_node(KernelContext& ctx, Graph& g, Node& n) {
  if (!int8_add(g, n)) return false;
  const Value &a = in(g, n, 0), &b = in(g, n, 1);  // (their data present: in() checks)
  Value& o = g.values[n.output];
  if (a.shape != b.shape) return false;
  ensure_shape(o, a.shape);
  const int64_t total = o.numel();
  auto operand = [&](const Value& v) {
    Q8Operand x;
    x.shift = zero_code(v);
    x.scale = v.scale;
    if (!v.as_codes) {
      if (!v.raw && (int64_t)v.data.size() < total) fail(n, "int8 input values missing (corrupt program?)");
      x.values = v.cdata();
    } else {
      if ((int64_t)v.q8.size() < total) fail(n, "int8 input codes missing (corrupt program?)");
      x.codes = v.q8.data();
    }
    return x;
  };
  const Q8Operand qa = operand(a), qb = operand(b);
  OutputRows out(o, 0);
  n.snapped = true;  // (clamped, and snapped or written as codes)
  Q8AddFixed fx;  // XNNPACK's fixed-point add where it takes the scales (results in grid units)
  if (add_fixed_params(a.scale, b.scale, o.scale, fx)) {
    const Q8Params pr = q8_params(n, a, nullptr, out, true);  // (the clamp and results in grid units)
    parallel(ctx, total, 1 << 12, [&](int64_t i0, int64_t i1) { add_q8_fixed(qa, qb, fx, pr.lo, pr.hi, out.q, i0, i1); });
    return true;
  }
  parallel(ctx, total, 1 << 12, [&](int64_t i0, int64_t i1) { add_q8(qa, qb, n.out_min, n.out_max, out.q, i0, i1); });
  return true;
}

void fully_connected_q8(KernelContext& ctx, Node& n, const Value& a, int64_t M, int64_t IC, int64_t OC,
                        const float* bias, Value& o, Scratch& sc) {
  int32_t zpa;
  const uint8_t* rows = value_codes(ctx, n, a, M * IC, sc.q8, zpa);
  ETNP_THREAD_LOCAL(std::vector<uint8_t>, padded);
  OutputRows out(o, OC);
  const Q8Params pr = q8_params(n, a, bias, out, !n.qexact.empty());
  const PackedQ8& pq = pr.exact ? n.qexact[0] : n.qpacked;
  if (pq.Kp != IC) {  // rows padded to the packed K (zero weights there)
    padded.assign((size_t)(M * pq.Kp), 0);
    for (int64_t m = 0; m < M; m++) std::memcpy(padded.data() + m * pq.Kp, rows + m * IC, (size_t)IC);
    rows = padded.data();
  }
  ETNP_THREAD_LOCAL(std::vector<float>, s);
  ETNP_THREAD_LOCAL(std::vector<int32_t>, z);
  QActivations qa = repeated_params(pr.sa, zpa, M, s, z);
  qa.data = rows;
  qgemm_q8(ctx.pool, M, qa, pq, pr.bias, pr.lo, pr.hi, out.q);
  n.snapped = out.finished();
}

bool conv2d_q8(KernelContext& ctx, Graph& g, Node& n, const Value& a, int64_t N, int64_t H, int64_t W, int64_t OH,
               int64_t OW, const float* bias, Value& o, Scratch& sc) {
  const int64_t G = n.groups, ICg = n.group_in, OCg = n.group_out, OC = G * OCg, C = G * ICg;
  const int64_t K = (int64_t)n.kh * n.kw * ICg, M = N * OH * OW;
  const bool grouped = n.qconv_grouped;  // (then G > 1: one packing, the block path below)
  if ((int64_t)n.qconv.size() != (grouped ? 1 : G) || !on_int8_grid(a) || n.residual != kInvalidId) return false;
  for (const PackedQ8& p : n.qconv)
    if (p.K != K || p.N != (grouped ? OC : OCg)) return false;
  const int64_t Kp = n.qconv[0].Kp;
  int32_t zpa;
  const uint8_t* codes = value_codes(ctx, n, a, N * H * W * C, sc.q8, zpa);
  const uint8_t pad_code = (uint8_t)(zpa + 128);
  const bool pointwise = n.kh == 1 && n.kw == 1 && n.sh == 1 && n.sw == 1 && !n.pad_top && !n.pad_left &&
                         !n.pad_bottom && !n.pad_right;
  OutputRows out(o, OC);
  const Q8Params pr = q8_params(n, a, bias, out, n.qexact.size() == n.qconv.size());
  const std::vector<PackedQ8>& packs = pr.exact ? n.qexact : n.qconv;
  const float lo = pr.lo, hi = pr.hi;
  bias = pr.bias;
  n.snapped = out.finished();
  // the chain after the node (Node::then) on the rows of a block as soon as the GEMM finished
  // them (the output is final there: snapped in the epilogue, or plain float32); one group
  // (an output kept as codes has no chain after it: only int8 GEMMs read it)
  const bool final_rows = !o.as_codes && (out.finished() || (o.dtype == FP32 && o.quant == Quant::None));
  if (pointwise && G == 1 && C == Kp) {  // the codes are the GEMM's rows
    ETNP_THREAD_LOCAL(std::vector<float>, s);
    ETNP_THREAD_LOCAL(std::vector<int32_t>, z);
    QActivations qa = repeated_params(pr.sa, zpa, M, s, z);
    qa.data = codes;
    if (ChainHook* then = take_chain(n, final_rows && M >= 192)) {  // blocks of rows, the chain after each
      const int64_t rows = balanced_rows(M, 96, 24, ctx.pool ? ctx.pool->num_threads() : 1),
                    blocks = (M + rows - 1) / rows;
      parallel(ctx, blocks, 1, [&](int64_t b, int64_t e) {
        const int64_t m0 = b * rows, m1 = std::min(M, e * rows);
        QActivations qb = qa;
        qb.data += m0 * Kp;
        qb.scale += m0;
        qb.zero_point += m0;
        qgemm_q8(nullptr, m1 - m0, qb, packs[0], bias, lo, hi, out.at(m0 * OC));
        then->run.run(m0 * OC, m1 * OC);
      });
      return true;
    }
    qgemm_q8(ctx.pool, M, qa, packs[0], bias, lo, hi, out.q);
    return true;
  }
  const int64_t taps = (int64_t)n.kh * n.kw;
  const int64_t nthreads = ctx.pool ? ctx.pool->num_threads() : 1;
  // On AVX-512 VNNI a block's rows are read straight from the input's codes (qgemm_q8_indirect,
  // qgemm_q8_grouped): per output pixel a pointer per tap, to its channels or to C codes of 0
  // (the padding); one table per block serves every group (offset gi * ICg) and panel.
  const bool indirect = qgemm_q8_indirect_ok(n.qconv[0], taps);  // (true where grouped: prepare_conv_q8)
  // Blocks of output pixels: read in place, blocks of at most 48 (their pointer tables are small;
  // many blocks share the work evenly); unfolded, into per-thread byte rows of Kp (at most 32 KB).
  const int64_t rows = indirect ? balanced_rows(M, 48, 8, nthreads)
                                : balanced_rows(M, std::max<int64_t>(24, std::min<int64_t>(240, (int64_t(1) << 15) / Kp)) / 24 * 24, 24);
  const int64_t blocks = (M + rows - 1) / rows;
  // pixels [m0, m1) of group gi as byte rows of Kp at dst (zeros past K: zero weights there)
  auto unfold = [&](int64_t gi, int64_t m0, int64_t m1, uint8_t* dst) {
    im2col_rows(n, codes, H, W, C, OH, OW, gi, m0, m1, dst, Kp, pad_code);
    if (Kp > K)
      for (int64_t m = m0; m < m1; m++) std::memset(dst + (m - m0) * Kp + K, 0, (size_t)(Kp - K));
  };
  if (!indirect && unfold_whole(ctx, blocks * G, M * Kp)) {  // (xnn_im2col.h; 4x4 pixels of a 3x3x256 window are one block)
    sc.q8col.resize((size_t)(M * Kp));
    uint8_t* col = sc.q8col.data();
    ETNP_THREAD_LOCAL(std::vector<float>, s);
    ETNP_THREAD_LOCAL(std::vector<int32_t>, z);
    QActivations qa = repeated_params(pr.sa, zpa, M, s, z);
    qa.data = col;
    for (int64_t gi = 0; gi < G; gi++) {
      parallel(ctx, blocks, 1, [&](int64_t b, int64_t e) {
        unfold(gi, b * rows, std::min(M, e * rows), col + b * rows * Kp);
      });
      qgemm_q8(ctx.pool, M, qa, packs[gi], bias ? bias + gi * OCg : nullptr, lo, hi, out.at(gi * OCg));
    }
    return true;
  }
  // tasks: a block of output pixels x a group x a range of its 16-column panels (grouped packing:
  // x a range of panels of several groups each), the tasks of a block in turn (its input rows
  // stay in cache); one region for all the groups (a grouped convolution's are small GEMMs).
  // Panel ranges where the blocks alone give fewer than four tasks a thread (read in place only:
  // an unfolding task unfolds its block's rows for all of a group's panels).
  // With one group and whole rows a task, the chain after the node runs on each block's rows
  // right away.
  const int64_t gcount = grouped ? 1 : G;
  const int64_t panels = ((grouped ? OC : OCg) + kQ8PanelCols - 1) / kQ8PanelCols;
  const GemmTasks split = indirect ? gemm_tasks(blocks * gcount, panels, ctx.pool) : GemmTasks{panels, 1};
  const int64_t units = gcount * split.split;  // a block's tasks
  ChainHook* then = take_chain(n, final_rows && G == 1 && split.split == 1);
  // (chunks of at least half a thread's share: each chunk sets up its rows' parameters and
  // pointer table, and a grouped convolution's tasks are small - chunks of one task cost a
  // 2-thread q8s RegNet call 8%)
  parallel(ctx, blocks * units, std::max<int64_t>(1, blocks * units / (2 * nthreads)), [&](int64_t b, int64_t e) {
    ETNP_THREAD_LOCAL(std::vector<uint8_t>, buf);  // grow only
    ETNP_THREAD_LOCAL(std::vector<uint8_t>, pad);
    ETNP_THREAD_LOCAL(std::vector<const uint8_t*>, ptrs);
    ETNP_THREAD_LOCAL(std::vector<float>, s);
    ETNP_THREAD_LOCAL(std::vector<int32_t>, z);
    QActivations qa = repeated_params(pr.sa, zpa, rows, s, z);
    if (indirect) {
      pad.assign((size_t)C, pad_code);
      ptrs.resize((size_t)(rows * taps));
    } else {
      if (buf.size() < (size_t)(rows * Kp)) buf.resize((size_t)(rows * Kp));
      qa.data = buf.data();
    }
    int64_t table = -1;  // the block whose pointers are in ptrs
    for (int64_t t = b; t < e; t++) {
      const int64_t blk = t / units, m0 = blk * rows, m1 = std::min(M, m0 + rows);
      const int64_t gi = (t % units) / split.split, p0 = (t % split.split) * split.per, p1 = p0 + split.per;
      const float* gb = bias ? bias + gi * OCg : nullptr;
      if (indirect && table != blk) {
        conv_tap_pointers(n, codes, H, W, C, OH, OW, m0, m1, pad.data(), ptrs.data());
        table = blk;
      }
      bool done;
      if (grouped)
        done = qgemm_q8_grouped(m1 - m0, ptrs.data(), taps, ICg, OCg, p0, p1, qa, packs[0], bias, lo, hi, out.at(m0 * OC));
      else if (indirect)
        done = qgemm_q8_indirect(m1 - m0, ptrs.data(), taps, gi * ICg, p0, p1, qa, packs[gi], gb, lo, hi,
                                 out.at(m0 * OC + gi * OCg));
      else {
        unfold(gi, m0, m1, buf.data());
        qgemm_q8(nullptr, m1 - m0, qa, packs[gi], gb, lo, hi, out.at(m0 * OC + gi * OCg));
        done = true;
      }
      if (!done) fail(n, "int8 convolution kernel unavailable for its packed filter");
      if (then) then->run.run(m0 * OC, m1 * OC);
    }
  });
  return true;
}

}  // namespace etnp::xnn
