// Internal to the XNNPACK delegate's node files (xnn_*.cpp): the helpers they share and each
// node family's entry points, which run_node (xnn_ops.cpp) dispatches to.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "delegates/xnnpack/xnn_ops.h"

namespace etnp::xnn {

inline constexpr uint32_t kTransposeWeights = 0x1;
inline constexpr uint32_t kAlignCorners = 0x8;

// Clamp to an integer range before a cast; NaN goes to lo (casting NaN or out-of-range
// doubles to an integer type is undefined).
inline double clamp_q(double v, double lo, double hi) { return v >= lo ? (v <= hi ? v : hi) : lo; }

// A value of plain floats (float32 or fp16, not quantized): the float convolution paths'.
inline bool float_unquantized(const Value& v) { return (v.dtype == FP32 || v.dtype == FP16) && v.quant == Quant::None; }

// A (transposed) convolution on a float input whose constant float filter, of its own shape
// [groups * group_out, kh, kw, group_in], nothing but it reads (uses: count_readers): a filter its
// load-time lowering may read in another order (lower_stride1_deconv_as_conv, lower_dead_taps).
inline bool own_float_filter(const Graph& g, const Node& n, const std::vector<int>& uses) {
  if (n.inputs.size() < 2 || n.inputs[0] >= uses.size() || n.inputs[1] >= uses.size()) return false;
  const Value &x = g.values[n.inputs[0]], &w = g.values[n.inputs[1]];
  return float_unquantized(x) && w.is_constant && float_unquantized(w) && !w.qraw && uses[n.inputs[1]] == 1 &&
         w.dims.size() == 4 && w.dims[0] == (int64_t)n.groups * n.group_out && w.dims[1] == n.kh && w.dims[2] == n.kw &&
         w.dims[3] == n.group_in;
}

[[noreturn]] inline void fail(const Node& n, const std::string& m) { throw_exec(std::string(node_type_name(n.type)) + ": " + m); }

inline Value& in(Graph& g, const Node& n, size_t k) {
  uint32_t id = n.inputs.at(k);
  Value& v = g.values[id];
  // (a value read in place - Value::raw - is read through cdata() by every node that reads it;
  // one kept as int8 codes, Value::as_codes, has them in q8)
  const size_t have = v.as_codes ? v.q8.size() : v.data.size();
  if (!v.is_constant && !v.raw && have < (size_t)v.numel()) fail(n, "input " + std::to_string(k) + " has no data");
  return v;
}
inline Value* opt_in(Graph& g, const Node& n, size_t k) {
  return k < n.inputs.size() && n.inputs[k] != kInvalidId ? &g.values[n.inputs[k]] : nullptr;
}
inline Value& out(Graph& g, const Node& n) { return g.values[n.output]; }

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

inline Tensor wrap(Value& v) {
  Tensor t;
  t.dtype = DType::F32;
  t.dim = (int)v.shape.size();
  for (int i = 0; i < t.dim; i++) { t.sizes[i] = v.shape[i]; t.dim_order[i] = (uint8_t)i; }
  t.compute_strides();
  t.data = const_cast<float*>(v.cdata());  // (a graph input read in place: the caller's tensor)
  t.capacity = v.data.size() * sizeof(float);
  t.dynamism = Dynamism::Bound;
  return t;
}

inline void clamp_range(float* d, int64_t n, float lo, float hi) {
  if (!std::isfinite(lo) && !std::isfinite(hi)) return;
  for (int64_t i = 0; i < n; i++) d[i] = std::min(std::max(d[i], lo), hi);
}
inline void clamp_values(Value& o, float lo, float hi) { clamp_range(o.data.data(), o.numel(), lo, hi); }
inline void clamp_output(const Node& n, Value& o) { clamp_values(o, n.out_min, n.out_max); }

// ---- elementwise (xnn_elementwise.cpp) ----
// Runs n when it is an elementwise node (binary, unary, softmax, clamp/copy/convert); false otherwise.
bool run_elementwise(KernelContext& ctx, Graph& g, Node& n, Scratch& sc);
// The elementwise node types' functions (null for other types). Unary: y = f(x) over n elements
// (param: the node's fparam); costly: transcendental (a table lookup is cheaper: unary_table);
// grain: elements a thread's share at least. Clamp, Copy and Convert copy (run_node clamps and
// converts). Binary: the whole node (broadcasting), and f over same-shape arrays.
struct UnaryOp {
  void (*f)(const float* x, float* y, int64_t n, float param);
  bool costly;
  int64_t grain;
};
struct BinaryOp {
  // (fin: clamp and finish the output per task as run_node would, returning true; null: not)
  bool (*node)(KernelContext& ctx, Value& a, Value& b, Value& o, double (*generic)(double, double), const Node* fin);
  void (*same_shape)(const float* a, const float* b, float* y, int64_t n);
  double (*generic)(double, double);  // the same function in double (shapes the float path cannot take)
};
const UnaryOp* unary_op(int type);
const BinaryOp* binary_op(int type);
// For a costly unary node whose input lies on an int8 grid (its own, or Value::grid_source's),
// which has 256 values and NaN: f of each into table[257], indexed as grid_table_lookup reads it
// (kernels/compute/quantize_row.h; ga: the input's grid), and true. The same results as f on the elements;
// when the output is on an int8 grid and the node has no clamp, the table holds them snapped and
// n.snapped is set (run_node skips the snapping pass). False: no table.
bool unary_table(const Graph& g, Node& n, const UnaryOp& op, float* table, Int8Grid& ga);
void add_values(KernelContext& ctx, Value& a, Value& b, Value& o);  // o = a + b, broadcasting

// ---- layout (xnn_layout.cpp) ----
// Permutations that, once runs of adjacent dims are merged, swap the last two of [B, R, S];
// false (nothing done) for others.
bool transpose_as_batched_2d(KernelContext& ctx, const Value& a, const std::vector<int64_t>& perm, Value& o);
void transpose(KernelContext& ctx, Graph& g, Node& n);
void reshape(KernelContext& ctx, Graph& g, Node& n, Scratch& sc);
void slice(KernelContext& ctx, Graph& g, Node& n);
void pad(KernelContext& ctx, Graph& g, Node& n);
void concat(KernelContext& ctx, Graph& g, Node& n);
void resize_bilinear(Graph& g, Node& n);

// ---- pooling (xnn_pooling.cpp) ----
void pool(KernelContext& ctx, Graph& g, Node& n, bool is_max, Value* indices);
void global_avg_pool(KernelContext& ctx, Graph& g, Node& n);

// ---- matrix ops (xnn_matmul.cpp) ----
const Value* fused_residual(Graph& g, Node& n, const std::vector<int64_t>& shape);
Value& gemm_output(Graph& g, const Node& n, const std::vector<int64_t>& shape);
void check_filter(const Node& n, const Value& w, std::initializer_list<int64_t> want);
void fully_connected(KernelContext& ctx, Graph& g, Node& n, Scratch& sc);
// qd8 x 4-bit FullyConnected: a dynamically quantized input and a non-transposed 4-bit filter
// with a scale per block of input channels (qb4w) or per output channel (qc4w: one block of all
// input channels). Packs the nibbles as they are (Node::qb4, qgemm_qb4.h: per block an exact
// int32 sum, scaled by the block's scales and summed in float32, as XNNPACK's qd8-f32-qb4w GEMM);
// where this build has no 4-bit GEMM, their int8 values (Node::qblocks, one panel a block; qc4w:
// Node::qpacked, as qd8 x qc8w). False where it does not apply.
bool prepare_fc_q4w(ThreadPool* pool, const Value* x, Node& n, const Value& w, int64_t IC, int64_t OC, bool tw);
void batch_matmul(KernelContext& ctx, Graph& g, Node& n);
void sdpa(Graph& g, Node& n);

// ---- convolutions (xnn_conv.cpp) ----
void conv2d(KernelContext& ctx, Graph& g, Node& n, Scratch& sc);
// Static-int8 Conv2d and FullyConnected in integer arithmetic (xnn_static_q8.cpp): the prepare
// functions pack the int8 filter (n.qconv per group; n.qpacked) where the input is on an int8
// grid and the filter int8 with zero point 0; conv2d_q8 computes the node from it into o (false,
// having done nothing, where it does not apply); fully_connected_q8 for an FC so prepared.
// (x: the node's input value, or null)
void prepare_conv_q8(ThreadPool* pool, const Value* x, Node& n, const Value& w);
bool prepare_fc_q8(ThreadPool* pool, const Value* x, Node& n, const Value& w, int64_t IC, int64_t OC, bool tw);
// Static-int8 values may be kept as int8 codes (Value::as_codes; ETNP_XNN_CODES=off: never).
bool codes_enabled();
// A node that only moves or selects its inputs' elements (transposes, reshapes, slices,
// concatenation, max pooling, copies), all on the output's int8 grid, with no clamp: its output
// is on that grid already (snapping it would change nothing).
bool moves_grid_points(const Graph& g, const Node& n);
// Concatenation, max pooling, transposes and reshapes of values on one int8 grid
// (moves_grid_points): they run on byte codes where an input or the output is kept as codes
// (concat, pool, transpose, reshape: a codes path), and any of them may be.
bool int8_moves(const Graph& g, const Node& n);
// The byte codes of static-int8 value v (total elements, then kDwQ8CodeSlack readable bytes):
// its own (Value::as_codes), or computed into buf; zpa: the int8 GEMM's zero point for them.
const uint8_t* value_codes(KernelContext& ctx, const Node& n, const Value& v, int64_t total, std::vector<uint8_t>& buf,
                           int32_t& zpa);
// Where a node writes static-int8 value o's codes: o's own (kept as codes), or buf - then
// codes_to_values turns them into o's float32 grid points.
uint8_t* output_codes(Value& o, std::vector<uint8_t>& buf);
void codes_to_values(KernelContext& ctx, Value& o, const uint8_t* codes);
// A Convert between float32 and a static-int8 value without a clamp (xnn_static_q8.cpp): the
// int8 side may be kept as codes - convert_codes then writes the snapped values' codes, or reads
// the codes into float32 grid points (false, having done nothing, where neither side is codes).
bool int8_convert(const Graph& g, const Node& n);
// A GlobalAvgPooling2d of a static-int8 input (xnn_pooling.cpp): exact integer sums of the
// input's codes (its own where kept as codes, else its grid points'), with ETNP_XNN_CODES=off
// too; its output stays float32, snapped to its grid. gap_reads_codes: whether it reads the input
// itself (not in ETNP_XNN_FUSION=steps where it absorbed an NCHW -> NHWC transpose: that
// transpose, of float32 grid points, runs first).
bool int8_gap(const Graph& g, const Node& n);
bool gap_reads_codes(const Node& n);
bool convert_codes(KernelContext& ctx, Graph& g, Node& n);
// An Add of two static-int8 values of one shape into a third (xnn_static_q8.cpp): it runs on its
// own (no elementwise chain) on the operands' codes or grid points, in XNNPACK's fixed point
// (add_q8_fixed) where it takes the scales, and any of the three may be kept as codes (with
// ETNP_XNN_CODES=off too: the same arithmetic, on float32 grid points).
// add_q8_node runs it; false, having done nothing, where the shapes differ.
bool int8_add(const Graph& g, const Node& n);
bool add_q8_node(KernelContext& ctx, Graph& g, Node& n);
// A Multiply of two static-int8 values into a third (broadcasting; no elementwise chain), as
// XNNPACK computes it: the output's grid index round(float(ia * ib) * (sa * sb / so)), ia / ib the
// operands' grid indices. MulRequant turns float32 products of the operands' grid points (the float
// path's, unclamped, unsnapped) into that, in place: the integer product recovered exactly
// (|ia * ib| <= 2^16, the products' error is far below 1/2), scaled, clamped, snapped - two
// vectorised snaps (run_elementwise applies it to each task's part while in cache).
bool int8_mul(const Graph& g, const Node& n);
struct MulRequant {
  Int8Grid ints, out;  // the products to ia * ib (a grid of step 1), those onto the output's grid
  void operator()(float* y, int64_t len) const {
    snap_to_grid(ints, y, len);
    snap_to_grid(out, y, len);
  }
};
MulRequant mul_q8_requant(const Graph& g, const Node& n);
// A static-int8 DepthwiseConv2d's int8 filter (Node::qdw), where input and filter allow it.
void prepare_dw_q8(const Value* x, Node& n, const Value& w);
// The depthwise convolution on the input's int8 codes with Node::qdw, output o finished (clamped,
// snapped or written as codes; Node::snapped), the chain after the node run on each task's rows;
// false, having done nothing, where the input or output does not allow it.
bool depthwise_q8_rows(KernelContext& ctx, Node& n, const Value& a, const DepthwiseGeom& dg, const float* bias,
                       Value& o, Scratch& sc, ChainHook* then);
// Node::qexact / qdw_exact for a static-int8 Conv2d, FullyConnected or DepthwiseConv2d with packed
// int8 weights (xnn_requant.cpp: XNNPACK's requantization); cleared where it does not apply. After
// the packing (views of it), once per method load.
void plan_exact_requant(const Graph& g, Node& n);
// A filter's int8 values: the program's bytes themselves where they are those values (an int8
// filter kept as its bytes, Value::qraw: no copy), else a copy made here.
struct Int8Values {
  std::vector<int8_t> own;
  const int8_t* at = nullptr;
  const int8_t* data() const { return at; }
};
// The int8 values of a quantized filter of OC x K values (its decoded grid points divided by the
// scale of their output channel, dimension `oc_dim` of its 2-D view: 0 [OC, K], 1 [K, OC]).
void filter_int8_values(const Value& w, int64_t OC, int64_t K, int oc_dim, const float* scales, Int8Values& q);
// One of them: a decoded grid point f over its scale s, rounded and clamped to int8 (0 for s = 0).
inline int8_t int8_value(float f, float s) {
  return (int8_t)clamp_q(s != 0.f ? std::nearbyint((double)f / s) : 0.0, -128.0, 127.0);
}
bool conv2d_q8(KernelContext& ctx, Graph& g, Node& n, const Value& a, int64_t N, int64_t H, int64_t W, int64_t OH,
               int64_t OW, const float* bias, Value& o, Scratch& sc);
void fully_connected_q8(KernelContext& ctx, Node& n, const Value& a, int64_t M, int64_t IC, int64_t OC,
                        const float* bias, Value& o, Scratch& sc);
// Depthwise convolution into o (the node's output, or a fused projection's input); true when it
// also finished o (snapped, rounded: finalize_value's work, done per task), false when o is
// dynamically quantized and still needs finalize_value.
bool depthwise(KernelContext& ctx, Graph& g, Node& n, Value& o, Scratch& sc);
// ConvTranspose2d (xnn_deconv.cpp): per output phase a convolution of the input with the taps
// that reach it, as GEMMs on weights packed per group and phase (prepare_deconv, at load).
void prepare_deconv(ThreadPool* pool, Node& n, const float* filter, bool half);
void deconv(KernelContext& ctx, Graph& g, Node& n);

}  // namespace etnp::xnn
