// The XNNPACK delegate's graph, read from the processed blob ("XH00" header +
// XNNGraph flatbuffer "XN00"/"XN01" + constant data), bounds-checked throughout.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/compute/depthwise_q8.h"
#include "kernels/compute/qgemm_qb4.h"
#include "kernels/compute/gemm.h"
#include "kernels/compute/qgemm.h"
#include "runtime/program.h"
#include "delegates/xnnpack/xnn_value_buffer.h"
#include "util/float_buffer.h"
#include "util/compiler.h"

namespace etnp::xnn {

constexpr uint32_t kInvalidId = 0xFFFFFFFFu;

enum DataType : int16_t {
  FP32 = 1, FP16 = 2, QINT8 = 3, QUINT8 = 4, QINT32 = 5, QCINT8 = 6, QCINT32 = 7, QCINT4 = 8, QDINT8 = 9,
  QBINT4 = 10, QPINT8 = 11, INT32 = 12, PFP32 = 13, BF16 = 14,
};

enum class Quant { None, PerTensor, PerChannel, PerToken, PerChannelGroup };

// Every runtime value is held as float32; quantized values hold their dequantized grid
// points (writes snap to the grid), so the arithmetic matches XNNPACK's quantized kernels.
struct Value {
  int16_t dtype = FP32;
  std::vector<int64_t> dims;     // as serialised (upper bounds for dynamic inputs)
  uint32_t external_id = kInvalidId;
  uint32_t flags = 0;
  bool is_constant = false;
  Quant quant = Quant::None;
  float scale = 1.f;
  int32_t zero_point = 0;
  std::vector<float> scales;     // per channel (or per channel-group)
  std::vector<int32_t> ints;     // an int32-quantized constant's integers (a static-int8 bias: exact_requant)
  int32_t channel_dim = 0, group_size = 0, nonbatch_dims = 1;
  uint32_t scale_buffer = 0, num_scales = 0;  // scales stored in constant data
  // runtime state
  std::vector<int64_t> shape;
  ValueBuffer data;  // (bound to an output tensor's memory during a call: xnn_value_buffer.h)
  // dynamically quantized values (QDINT8): each row of row_len elements holds the grid points
  // (q - row_zp[r]) * row_scale[r], q in [-128, 127] (kept in q8 too, for the int8 GEMM)
  int64_t row_len = 0;
  std::vector<float> row_scale;  // (XNNPACK's qd8 parameters: kernels/compute/quantize_row.h)
  std::vector<int32_t> row_zp;
  std::vector<uint8_t> q8;  // the same rows as integers, q + 128
  // A static-int8 value (per-tensor qs8 / qu8) that only int8 GEMM nodes write and read (planned
  // at method load): kept only as its byte codes, in q8 (q + 128 for qs8, q for qu8), never as
  // float32 grid points in `data` (xnn_static_q8.cpp).
  bool as_codes = false;
  // during method load: float32 constant bytes in the program, not copied, for filters that are
  // used only through packed weights (read_graph leaves `data` empty for them); during a call: the
  // caller's tensor for a graph input that only transposes read (the executor's BorrowGuard), or
  // for a reshape of a graph input, that input's elements (Node::view_input)
  const float* raw = nullptr;
  const float* cdata() const { return raw ? raw : data.data(); }
  // during method load: the program's bytes of a quantized constant that only FullyConnected /
  // Conv2d nodes read as their filter, not decoded by read_graph: each node preparing it decodes
  // it into `data` for its packing and frees it after (decode_filter / release_filter), so the
  // whole filter set never exists as float32 at once
  const uint8_t* qraw = nullptr;
  size_t qraw_size = 0;
  // the program bytes `raw` / `qraw` point into: perhaps not read from the file yet; the method
  // load reads them right before the nodes that pack them (into a scratch copy where they were
  // never read: `raw` / `qraw` point there meanwhile) and gives them back right after
  // (XnnDelegate::pack_nodes: Program::borrow / release)
  Span source;
  // a float32 value whose elements are those of an int8-grid value (a Convert's dequantized copy,
  // reshaped or transposed): that value's id; its 256 grid points are this value's only values
  uint32_t grid_source = kInvalidId;
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

enum NodeType {
  Add = 1, FullyConnected, Softmax, Sigmoid, StaticTranspose, Clamp, Conv2d, Div, StaticResizeBilinear2D,
  StaticConstantPad, AvgPooling2d, Minimum, DepthwiseConv2d, MaxPooling2d, Multiply, Subtract, Floor, Convert,
  GlobalAvgPooling2d, StaticReshape, ArgMaxPooling2d, SquareRoot, Ceiling, Hardswish, LeakyReLU, Maximum, Negate,
  Square, ELU, Abs, PReLU, Concatenate2, Concatenate3, Concatenate4, StaticSlice, ScaledDotProductAttention,
  BatchMatrixMultiply, Concatenate5, ConvTranspose2d, ReciprocalSquareRoot, Log, Gelu, Tanh, Exp, Sin, Copy, Cos,
  kNumNodeTypes
};
const char* node_type_name(int t);

struct Node {
  int type = 0;
  std::vector<uint32_t> inputs;  // value ids
  uint32_t output = kInvalidId, output2 = kInvalidId;
  uint32_t flags = 0;
  float out_min = -std::numeric_limits<float>::infinity(), out_max = std::numeric_limits<float>::infinity();
  // convolution / pooling
  uint32_t pad_top = 0, pad_right = 0, pad_bottom = 0, pad_left = 0, kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  uint32_t group_in = 0, group_out = 0, groups = 1, adj_h = 0, adj_w = 0;
  // shape ops
  std::vector<int64_t> ints, ints2;  // perm / new_shape / offsets+sizes / pre+post paddings
  float fparam = 0;                  // alpha, slope, pad value
  uint32_t axis = 0, new_h = 0, new_w = 0;
  // prepared weights (FullyConnected, Conv2d): one packed panel set per group
  std::vector<PackedB> packed;
  PackedQ8 qpacked;  // FullyConnected with int8 weights on a dynamically quantized or static-int8 input (N > 0 when set)
  // Conv2d on a static-int8 input with int8 weights (xnn_static_q8.cpp): one per group, or
  // (qconv_grouped) one of all groups' columns, small groups several to a panel (qgemm_q8_grouped)
  std::vector<PackedQ8> qconv;
  bool qconv_grouped = false;
  // FullyConnected, dynamically quantized input x 4-bit weights in blocks of K with a scale each
  // (qd8 x qb4w): the blocks' int8 values, one PackedQ8 per block of input channels, in order
  std::vector<PackedQ8> qblocks;
  // ... or (where the filter's values are nibbles: always from the program's bytes) the nibbles
  // themselves, two a byte (qgemm_qb4.h; N > 0 when set); a per-channel 4-bit filter (qd8 x
  // qc4w) too, as one block of all input channels
  PackedQB4 qb4;
  // DepthwiseConv2d (multiplier 1) on a static-int8 input with an int8 filter (taps > 0 when set)
  PackedDwQ8 qdw;
  bool dw_int8 = false;  // runs on qdw (planned at load: an int8 filter, multiplier 1)
  // Static-int8 Conv2d / FullyConnected / DepthwiseConv2d whose results XNNPACK's requantization
  // gives (xnn_static_q8.cpp: plan_exact_requant): qconv / qpacked / qdw with the scales
  // input scale * filter scale / output scale and the program's int32 bias (views of the same
  // weights); empty / taps 0 where not planned
  std::vector<PackedQ8> qexact;
  PackedDwQ8 qdw_exact;
  // A Conv2d that was a DepthwiseConv2d of one input channel (lower_depthwise_as_conv): its filter
  // is still in the depthwise layout, [KH, KW, OC] taps-major (its dims say [OC, KH, KW, 1])
  bool filter_taps_major = false;
  // A Conv2d that was a stride-1 ConvTranspose2d (lower_stride1_deconv_as_conv): its filter is
  // the transposed convolution's, read with its taps reversed when packed
  bool filter_flipped = false;
  // A Conv2d whose outer kernel rows / columns read only padding at the input size planned
  // (lower_dead_taps): kh x kw are the taps kept, from row tap_row0 and column tap_col0 of its
  // filter of filter_kh x filter_kw taps (0: not trimmed); planned_h x planned_w its input's
  // largest size, beyond which a dropped tap could read the image (a call with a larger input fails)
  uint32_t filter_kh = 0, filter_kw = 0, tap_row0 = 0, tap_col0 = 0;
  int64_t planned_h = 0, planned_w = 0;
  // A 3x3 stride-1 Conv2d run by Winograd's F(2x2, 3x3) (xnn_winograd.cpp): `packed` holds the 16
  // transformed filters, each [IC x OC], in place of the direct [9 * IC x OC] packing
  bool winograd = false;
  // A 1-D stride-1 Conv2d (one kernel row or column) run by F(3, 3) over pieces of 3 taps
  // (xnn_winograd.cpp): `packed` holds the 5 transformed filters, each [P * IC x OC], or (one
  // packing: short sequences, where they would cost more bytes than they save) the direct
  // packing, transformed at each call
  bool winograd1d = false;
  std::vector<float> bias;
  // fused at method load (xnn_fuse.cpp). A Conv2d or FullyConnected that absorbed the Add after
  // it: `output` is the add's, `residual` (also inputs[3]) its other operand, res_min/res_max its
  // clamp; the node's own result, `unfused`, is written only where the shapes differ at run time.
  uint32_t residual = kInvalidId, unfused = kInvalidId;
  float res_min = -std::numeric_limits<float>::infinity(), res_max = std::numeric_limits<float>::infinity();
  // A Conv2d that absorbed the NCHW -> NHWC transpose before it: inputs[0] is the NCHW value,
  // `nchw_transposed` the transpose's result, written only when the conv cannot read NCHW itself.
  uint32_t nchw_transposed = kInvalidId;
  // A Conv2d that absorbed the NHWC -> NCHW transpose after it (a 1-D convolution between
  // NCHW-layout nodes): `output` is the transpose's NCHW result, written by the convolution itself;
  // `nchw_output` the convolution's own NHWC result, written only when it cannot write NCHW.
  // `residual` then is an operand of the NCHW result's element order (an Add after the transpose
  // and a reshape of it), and `act` (a unary node type, 0 none; parameter act_param) an
  // elementwise function applied last, in place of the unary node that read the result.
  // `act2` (0 none), another unary function, is applied to a copy of the final result that the
  // node writes to `output2` (a LeakyReLU of a residual sum that the next residual add also reads).
  // `residual2` (also inputs[4]; res2_min / res2_max) is a second Add's operand, added after the
  // first (a sum of residual blocks' results).
  uint32_t nchw_output = kInvalidId, residual2 = kInvalidId;
  float res2_min = -std::numeric_limits<float>::infinity(), res2_max = std::numeric_limits<float>::infinity();
  int act = 0, act2 = 0;
  float act_param = 0, act2_param = 0;
  bool residual_pending = false;  // during a call: the add is still to be applied (shapes differed)
  bool clamp_fused = false;       // a Clamp after it was fused into out_min/out_max (profiles say so)
  bool snapped = false;           // during a call: the node finished its output itself (clamped, snapped / rounded): run_node does not
  bool move_input = false;        // StaticReshape, Convert, Softmax, float elementwise: takes its input's buffer (nothing else reads it; softmax and elementwise run in place)
  uint8_t move_operand = 0;       // (an elementwise node: which input's buffer it takes - one of the output's shape)
  bool view_input = false;        // StaticReshape of a graph input: its result is the input's elements in place (Value::raw)
  // A DepthwiseConv2d that absorbed the pointwise Conv2d producing its input (the expansion of an
  // inverted-residual block): `pre` is that node (its output, inputs[0] here, is written only when
  // the band pipeline cannot run); its input is also inputs[3] here, for the buffer planner.
  std::shared_ptr<Node> pre;
  // ... and the pointwise Conv2d reading its result (the block's projection, possibly with a
  // residual add fused): `output` is the projection's; `post->inputs[0]`, this node's own result,
  // is written only when the band pipeline cannot run. Its residual is also an input here.
  std::shared_ptr<Node> post;
  // During a call: the elementwise chain after this node (a SiLU after a convolution), for the
  // node to run on its output rows as soon as they are final (xnn_chain.h); null when none.
  struct ChainHook* then = nullptr;
  // the node's index in the graph as read (before fuse_nodes moved nodes into others' pre / post):
  // what a weight cache names its packed state by (xnn_weight_cache.h)
  uint32_t origin = kInvalidId;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<uint32_t> input_ids, output_ids;
  // Where each graph input/output is found in the DelegateCall's argument list: its value's
  // external_id (as ExecuTorch binds them: args[external_id]), not its position in input_ids.
  // The argument list may also hold non-tensor values (SymInts) that no external id names.
  std::vector<uint32_t> input_args, output_args;
  uint32_t num_args = 0;  // the least argument count that covers every external id
};

// Decodes constant bytes into v.data as float32 (dequantizing quantized ones).
void decode_constant(Value& v, const uint8_t* p, size_t n);
// Parses the blob; constants are decoded to float32 (named keys resolve through the program),
// except quantized filters used only through packed weights (Value::qraw).
// The named data it reads is appended to `consumed` (when given).
// UNKEYED (if given): the named data it read whose key does not name its content (ExecuTorch's
// XNNPACK serializer keys constants by the SHA-256 of their bytes: the blob then identifies them);
// KEYED (if given): the rest, each with its key (the hex SHA-256 its bytes should have).
Graph read_graph(Span blob, const Program& program, std::vector<Span>* consumed = nullptr,
                 std::vector<Span>* unkeyed = nullptr, std::vector<std::pair<Span, std::string>>* keyed = nullptr);
// Fuses nodes whose intermediate value nothing else reads (see Node): a residual Add into the
// Conv2d/FullyConnected before it, an input NCHW -> NHWC transpose into the Conv2d after it, and
// the pointwise Conv2d before and after a DepthwiseConv2d into one band pipeline.
// ETNP_XNN_FUSION=off skips it; =steps fuses but runs every fused node as its separate steps (the
// path taken when run-time shapes do not allow the fused one): for debugging and tests.
void fuse_nodes(Graph& g);
// Per value, the input slots of the graph's nodes reading it; graph outputs count as readers.
std::vector<int> count_readers(const Graph& g);
enum class FusionMode { On, Off, Steps };
FusionMode fusion_mode();  // read once per process
// A node's name for profiles, with what was fused into it ("XNNConv2d+Add").
std::string node_display_name(const Node& n);

}  // namespace etnp::xnn
