#include "delegates/xnnpack/xnn_graph.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "pte/flatbuffer.h"
#include "util/compiler.h"

namespace etnp::xnn {

namespace {

const char* kNames[] = {"", "XNNAdd", "XNNFullyConnected", "XNNSoftmax", "XNNSigmoid", "XNNStaticTranspose", "XNNClamp",
                        "XNNConv2d", "XNNDiv", "XNNStaticResizeBilinear2D", "XNNStaticConstantPad", "XNNAvgPooling2d",
                        "XNNMinimum", "XNNDepthwiseConv2d", "XNNMaxPooling2d", "XNNMultiply", "XNNSubtract", "XNNFloor",
                        "XNNConvert", "XNNGlobalAvgPooling2d", "XNNStaticReshape", "XNNArgMaxPooling2d", "XNNSquareRoot",
                        "XNNCeiling", "XNNHardswish", "XNNLeakyReLU", "XNNMaximum", "XNNNegate", "XNNSquare", "XNNELU",
                        "XNNAbs", "XNNPReLU", "XNNConcatenate2", "XNNConcatenate3", "XNNConcatenate4", "XNNStaticSlice",
                        "XNNScaledDotProductAttention", "XNNBatchMatrixMultiply", "XNNConcatenate5", "XNNConvTranspose2d",
                        "XNNReciprocalSquareRoot", "XNNLog", "XNNGelu", "XNNTanh", "XNNExp", "XNNSin", "XNNCopy", "XNNCos"};

[[noreturn]] void bad(const std::string& m) { throw_load("XNNPACK delegate: " + m); }

size_t elem_bytes(int16_t dt, int64_t numel, const std::vector<int64_t>& dims) {
  switch (dt) {
    case FP32: case QINT32: case QCINT32: case INT32: case PFP32: return (size_t)numel * 4;
    case FP16: case BF16: return (size_t)numel * 2;
    case QINT8: case QUINT8: case QCINT8: case QDINT8: case QPINT8: return (size_t)numel;
    case QCINT4: case QBINT4: {  // each row (last dim) padded to whole bytes
      int64_t last = dims.empty() ? 1 : dims.back();
      return last == 0 ? 0 : (size_t)(numel / last) * (size_t)((last + 1) / 2);
    }
  }
  bad("unknown tensor datatype " + std::to_string(dt));
}

std::vector<int64_t> uint_list(const fb::Table& t, int field) {
  fb::Vector v = t.vector(field, 4);
  std::vector<int64_t> out;
  for (uint32_t i = 0; i < v.size(); i++) out.push_back(v.at<uint32_t>(i));
  return out;
}

void read_value(const fb::Table& xv, Value& v, std::vector<uint32_t>& const_idx) {
  uint8_t ut = xv.scalar<uint8_t>(0);
  fb::Table u = xv.table(1);
  if (!u || (ut != 1 && ut != 2)) bad("value of unknown kind " + std::to_string(ut));
  fb::Table tv = ut == 1 ? u : u.table(0);
  if (!tv) bad("quantized value without tensor");
  v.dtype = tv.scalar<int16_t>(0);
  v.dims = uint_list(tv, 2);
  if (v.dims.size() > 6 || tv.scalar<uint32_t>(1) != v.dims.size()) bad("tensor rank mismatch");
  int64_t numel = 1;
  for (auto d : v.dims)
    if (etnp::mul_overflow(numel, d, &numel) || numel > (int64_t(1) << 36)) bad("tensor is too large");
  const_idx.push_back(tv.scalar<uint32_t>(3));
  v.external_id = tv.scalar<uint32_t>(4, 0);  // schema default 0: an absent field is id 0
  v.flags = tv.scalar<uint32_t>(5);
  if (ut == 2) {
    uint8_t qt = u.scalar<uint8_t>(1);
    fb::Table q = u.table(2);
    if (!q) bad("quantized value without parameters");
    switch (qt) {
      case 1: case 4: {  // PerChannelQuant / PerChannelGroupQuant
        fb::Vector sc = q.vector(0, 4);
        for (uint32_t i = 0; i < sc.size(); i++) v.scales.push_back(sc.at<float>(i));
        v.channel_dim = q.scalar<int32_t>(1);
        if (qt == 4) v.group_size = q.scalar<int32_t>(2);
        if (sc.empty()) {  // scales kept in constant data
          v.scale_buffer = q.scalar<uint32_t>(qt == 1 ? 2 : 4);
          v.num_scales = q.scalar<uint32_t>(qt == 1 ? 3 : 5);
          if (v.scale_buffer == 0) bad("per-channel quantization without scales");
        }
        v.quant = qt == 1 ? Quant::PerChannel : Quant::PerChannelGroup;
        if (qt == 4 && v.group_size <= 0) bad("invalid quantization group size");
        break;
      }
      case 2:
        v.quant = Quant::PerTensor;
        v.scale = q.scalar<float>(0);
        v.zero_point = q.scalar<int32_t>(1);
        if (!(v.scale > 0)) bad("non-positive quantization scale");
        break;
      case 3:
        v.quant = Quant::PerToken;
        v.nonbatch_dims = q.scalar<int32_t>(0);
        break;
      default: bad("unknown quantization kind " + std::to_string(qt));
    }
  }
}

uint32_t U(const fb::Table& t, int f) { return t.scalar<uint32_t>(f, 0); }

void read_node(const fb::Table& xn, Node& n) {
  uint8_t ty = xn.scalar<uint8_t>(0);
  fb::Table t = xn.table(1);
  if (ty == 0 || ty >= kNumNodeTypes) {
    std::string name = "XnnpackBackend:XNNNode" + std::to_string(ty);
    throw Error(ETNP_ERR_OPERATOR_NOT_FOUND, "XNNPACK delegate uses node type " + std::to_string(ty) +
                " which this runtime does not implement", name);
  }
  if (!t) bad("node without parameters");
  n.type = ty;
  fb::Table mm = xn.table(3);
  if (mm) {
    n.out_min = mm.scalar<float>(0, 0.f);  // schema defaults: absent means 0
    n.out_max = mm.scalar<float>(1, 0.f);
  }
  switch (ty) {
    case Add: case Div: case Minimum: case Multiply: case Subtract: case Maximum: case PReLU: case BatchMatrixMultiply:
      n.inputs = {U(t, 0), U(t, 1)}; n.output = U(t, 2); n.flags = t.scalar<uint32_t>(3); break;
    case FullyConnected:
      n.inputs = {U(t, 0), U(t, 1), U(t, 2)}; n.output = U(t, 3); n.flags = t.scalar<uint32_t>(4); break;
    case Conv2d: case DepthwiseConv2d: case ConvTranspose2d:
      n.pad_top = t.scalar<uint32_t>(0); n.pad_right = t.scalar<uint32_t>(1); n.pad_bottom = t.scalar<uint32_t>(2);
      n.pad_left = t.scalar<uint32_t>(3); n.kh = t.scalar<uint32_t>(4); n.kw = t.scalar<uint32_t>(5);
      n.sh = t.scalar<uint32_t>(6); n.sw = t.scalar<uint32_t>(7); n.dh = t.scalar<uint32_t>(8); n.dw = t.scalar<uint32_t>(9);
      n.group_in = t.scalar<uint32_t>(10); n.group_out = t.scalar<uint32_t>(11); n.groups = t.scalar<uint32_t>(12);
      n.adj_h = t.scalar<uint32_t>(13); n.adj_w = t.scalar<uint32_t>(14);
      n.inputs = {U(t, 15), U(t, 16), U(t, 17)}; n.output = U(t, 18); n.flags = t.scalar<uint32_t>(19);
      if (n.groups == 0 || n.group_in == 0 || n.group_out == 0) bad("convolution with zero groups or channels");
      break;
    case AvgPooling2d: case MaxPooling2d:
      n.pad_top = t.scalar<uint32_t>(0); n.pad_right = t.scalar<uint32_t>(1); n.pad_bottom = t.scalar<uint32_t>(2);
      n.pad_left = t.scalar<uint32_t>(3); n.kh = t.scalar<uint32_t>(4); n.kw = t.scalar<uint32_t>(5);
      n.sh = t.scalar<uint32_t>(6); n.sw = t.scalar<uint32_t>(7); n.dh = t.scalar<uint32_t>(8, 1); n.dw = t.scalar<uint32_t>(9, 1);
      n.inputs = {U(t, 10)}; n.output = U(t, 11); n.flags = t.scalar<uint32_t>(12);
      break;
    case ArgMaxPooling2d:
      n.pad_top = t.scalar<uint32_t>(0); n.pad_right = t.scalar<uint32_t>(1); n.pad_bottom = t.scalar<uint32_t>(2);
      n.pad_left = t.scalar<uint32_t>(3); n.kh = t.scalar<uint32_t>(4); n.kw = t.scalar<uint32_t>(5);
      n.sh = n.kh; n.sw = n.kw;
      n.inputs = {U(t, 6)}; n.output = U(t, 7); n.output2 = U(t, 8); n.flags = t.scalar<uint32_t>(9);
      break;
    case StaticTranspose:
      n.ints = uint_list(t, 1); n.inputs = {U(t, 2)}; n.output = U(t, 3); n.flags = t.scalar<uint32_t>(4); break;
    case StaticReshape:
      n.ints = uint_list(t, 1); n.inputs = {U(t, 2)}; n.output = U(t, 3); n.flags = t.scalar<uint32_t>(4); break;
    case StaticResizeBilinear2D:
      n.new_h = t.scalar<uint32_t>(0); n.new_w = t.scalar<uint32_t>(1); n.inputs = {U(t, 2)}; n.output = U(t, 3);
      n.flags = t.scalar<uint32_t>(4);
      break;
    case StaticConstantPad:
      n.ints = uint_list(t, 0); n.ints2 = uint_list(t, 1); n.fparam = t.scalar<float>(2); n.inputs = {U(t, 3)};
      n.output = U(t, 4); n.flags = t.scalar<uint32_t>(5);
      break;
    case StaticSlice:
      n.ints = uint_list(t, 1); n.ints2 = uint_list(t, 2); n.inputs = {U(t, 3)}; n.output = U(t, 4);
      n.flags = t.scalar<uint32_t>(5);
      break;
    case Concatenate2: case Concatenate3: case Concatenate4: case Concatenate5: {
      int k = ty == Concatenate2 ? 2 : ty == Concatenate3 ? 3 : ty == Concatenate4 ? 4 : 5;
      n.axis = t.scalar<uint32_t>(0);
      for (int i = 0; i < k; i++) n.inputs.push_back(U(t, i < 4 ? 1 + i : 7));
      n.output = U(t, 5); n.flags = t.scalar<uint32_t>(6);
      break;
    }
    case ELU: case LeakyReLU:
      n.fparam = t.scalar<float>(0); n.inputs = {U(t, 1)}; n.output = U(t, 2); n.flags = t.scalar<uint32_t>(3); break;
    case ScaledDotProductAttention:
      n.inputs = {U(t, 0), U(t, 1), U(t, 2), U(t, 3), U(t, 4)}; n.output = U(t, 5); n.flags = t.scalar<uint32_t>(6);
      break;
    default:  // all _XNNNode1x1
      n.inputs = {U(t, 0)}; n.output = U(t, 1); n.flags = t.scalar<uint32_t>(2);
  }
  // Geometry bounds: keep every product of these in range (corrupt blobs carry anything).
  const uint32_t kMax = 1u << 16;
  for (uint32_t p : {n.kh, n.kw, n.sh, n.sw, n.dh, n.dw})
    if (p == 0 || p > kMax) bad(std::string(node_type_name(n.type)) + ": kernel/stride/dilation out of range");
  for (uint32_t p : {n.pad_top, n.pad_right, n.pad_bottom, n.pad_left, n.adj_h, n.adj_w, n.groups, n.group_in, n.group_out})
    if (p > kMax * 16) bad(std::string(node_type_name(n.type)) + ": padding/channels out of range");
  for (auto* v : {&n.ints, &n.ints2})
    for (auto x : *v)
      if (x > (int64_t(1) << 32)) bad(std::string(node_type_name(n.type)) + ": shape parameter out of range");
}

// Argument positions of the graph's inputs and outputs (see Graph::input_args): each must carry
// a distinct external id.
void bind_external_ids(Graph& g) {
  g.input_args.clear();
  g.output_args.clear();
  g.num_args = 0;
  const uint32_t kMaxArgs = 1u << 16;
  std::vector<uint8_t> used;
  auto arg_of = [&](uint32_t id, const char* what) {
    uint32_t e = g.values[id].external_id;
    if (e >= kMaxArgs) bad(std::string("graph ") + what + " value " + std::to_string(id) + " has external id " +
                           std::to_string(e) + ", out of range");
    if (used.size() <= e) used.resize(e + 1, 0);
    if (used[e]) bad("external id " + std::to_string(e) + " is used by two graph inputs/outputs");
    used[e] = 1;
    g.num_args = std::max(g.num_args, e + 1);
    return e;
  };
  for (uint32_t id : g.input_ids) g.input_args.push_back(arg_of(id, "input"));
  for (uint32_t id : g.output_ids) g.output_args.push_back(arg_of(id, "output"));
}

// Every value a node reads is a constant, a graph input or an earlier node's output, and every
// graph output is written: the executor's buffers for a value nothing writes are borrowed ones
// (the runtime's BufferBank), which would hold whatever another delegate - of any program on the
// runtime - left there.
void check_defined_before_use(const Graph& g, const std::vector<uint32_t>& const_idx) {
  std::vector<uint8_t> defined(g.values.size(), 0);
  for (size_t i = 0; i < g.values.size(); i++) defined[i] = const_idx[i] != 0;
  for (uint32_t id : g.input_ids) defined[id] = 1;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    const Node& n = g.nodes[i];
    for (uint32_t id : n.inputs)
      if (id != kInvalidId && !defined[id])
        bad(std::string(node_type_name(n.type)) + " (node " + std::to_string(i) + ") reads value " + std::to_string(id) +
            ", which is not a constant, a graph input or an earlier node's output");
    defined[n.output] = 1;
    if (n.type == ArgMaxPooling2d) defined[n.output2] = 1;
  }
  for (uint32_t id : g.output_ids)
    if (!defined[id]) bad("graph output value " + std::to_string(id) + " is written by no node");
}

}  // namespace

// Decodes constant bytes of `v` into float32 (dequantizing quantized weights).
void decode_constant(Value& v, const uint8_t* p, size_t n) {
  int64_t numel = 1;
  for (auto d : v.dims) numel *= d;
  if (elem_bytes(v.dtype, numel, v.dims) > n) bad("constant data is smaller than its tensor");
  v.data.resize((size_t)numel);
  auto channel_of = [&](int64_t i) -> int64_t {
    if (v.quant != Quant::PerChannel && v.quant != Quant::PerChannelGroup) return 0;
    int cd = v.channel_dim;
    if (cd < 0 || cd >= (int)v.dims.size()) bad("quantization channel dim out of range");
    int64_t inner = 1;
    for (size_t k = cd + 1; k < v.dims.size(); k++) inner *= v.dims[k];
    int64_t c = (i / inner) % v.dims[cd];
    if (v.quant == Quant::PerChannelGroup) {  // groups along the last (input) dim
      int64_t last = v.dims.back(), groups = (last + v.group_size - 1) / v.group_size;
      return c * groups + (i % last) / v.group_size;
    }
    return c;
  };
  auto scale_of = [&](int64_t i) -> float {
    if (v.quant == Quant::PerTensor) return v.scale;
    if (v.quant == Quant::None) return 1.f;
    int64_t c = channel_of(i);
    if (c >= (int64_t)v.scales.size()) bad("too few quantization scales");
    return v.scales[c];
  };
  v.shape = v.dims;
  v.is_constant = true;
  if (v.dtype == FP32 || v.dtype == PFP32) {  // the common case: raw float32
    if (numel > 0) std::memcpy(v.data.data(), p, (size_t)numel * 4);
    return;
  }
  if ((v.dtype == QINT8 || v.dtype == QCINT8 || v.dtype == QUINT8) &&
      (v.quant == Quant::PerTensor || v.quant == Quant::PerChannel) && numel > 0) {
    // int8 filters (most of a quantized program): a run of `inner` elements per channel scale,
    // the same products as the general loop below without its per-element index arithmetic
    int64_t inner = numel, C = 1;
    if (v.quant == Quant::PerChannel) {
      const int cd = v.channel_dim;
      if (cd < 0 || cd >= (int)v.dims.size()) bad("quantization channel dim out of range");
      inner = 1;
      for (size_t k = cd + 1; k < v.dims.size(); k++) inner *= v.dims[k];
      C = v.dims[cd];
      if (C > (int64_t)v.scales.size()) bad("too few quantization scales");
    }
    const float zp = (float)v.zero_point;
    const bool sgn = v.dtype != QUINT8;
    float* d = v.data.data();
    for (int64_t i = 0; i < numel; i += inner) {
      const int64_t c = (i / inner) % C;
      const float s = v.quant == Quant::PerTensor ? v.scale : v.scales[(size_t)c];
      for (int64_t j = 0; j < inner; j++)
        d[i + j] = ((sgn ? (float)(int8_t)p[i + j] : (float)p[i + j]) - zp) * s;
    }
    return;
  }
  if (v.dtype == QINT32 || v.dtype == QCINT32) v.ints.assign((size_t)numel, 0);
  for (int64_t i = 0; i < numel; i++) {
    float x;
    switch (v.dtype) {
      case FP32: case PFP32: std::memcpy(&x, p + i * 4, 4); break;
      case FP16: { uint16_t h; std::memcpy(&h, p + i * 2, 2); x = half_to_float(h); break; }
      case BF16: { uint16_t h; std::memcpy(&h, p + i * 2, 2); x = bf16_to_float(h); break; }
      case INT32: { int32_t q; std::memcpy(&q, p + i * 4, 4); x = (float)q; break; }
      case QINT32: case QCINT32: {
        int32_t q;
        std::memcpy(&q, p + i * 4, 4);
        x = (float)q * scale_of(i);
        v.ints[(size_t)i] = q;
        break;
      }
      case QINT8: case QCINT8: x = ((float)(int8_t)p[i] - (float)v.zero_point) * scale_of(i); break;
      case QUINT8: x = ((float)p[i] - (float)v.zero_point) * scale_of(i); break;
      case QCINT4: case QBINT4: {  // two unsigned nibbles per byte, low first, zero point 8; rows padded to bytes
        int64_t last = v.dims.empty() ? 1 : v.dims.back(), col = i % last;
        uint8_t b = p[(i / last) * ((last + 1) / 2) + col / 2];
        int q = (col & 1) ? (b >> 4) : (b & 15);
        x = (float)(q - 8) * scale_of(i);
        break;
      }
      default: bad("constants of datatype " + std::to_string(v.dtype) + " are not supported");
    }
    v.data[(size_t)i] = x;
  }
  v.shape = v.dims;
  v.is_constant = true;
}


const char* node_type_name(int t) { return t > 0 && t < kNumNodeTypes ? kNames[t] : "XNNUnknown"; }

namespace {
// A SHA-256 digest in hex (what ExecuTorch's XNNPACK serializer names each constant by).
bool content_key(const std::string& key) {
  if (key.size() != 64) return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}
}  // namespace

Graph read_graph(Span blob, const Program& program, std::vector<Span>* consumed, std::vector<Span>* unkeyed,
                 std::vector<std::pair<Span, std::string>>* keyed) {
  fb::Buffer whole{blob.data, blob.size, "XNNPACK delegate blob"};
  // the blob's bytes are read as far as they are needed here: its header and graph; the
  // constant data it holds only where decoded here or right before packing (Value::source)
  program.ensure(Span{blob.data, std::min<size_t>(blob.size, 64)});
  whole.check(0, 8);
  size_t fb_off = 0, fb_size = blob.size, const_off = 0, const_size = 0;
  if (std::memcmp(blob.data + 4, "XH00", 4) == 0) {
    uint16_t hlen = whole.read<uint16_t>(8);
    if (hlen < 30) bad("header is shorter than 30 bytes");
    whole.check(0, hlen);
    fb_off = whole.read<uint32_t>(10);
    fb_size = whole.read<uint32_t>(14);
    const_off = whole.read<uint32_t>(18);
    const_size = (size_t)whole.read<uint64_t>(22);
    whole.check(fb_off, fb_size);
    whole.check(const_off, const_size);
    program.ensure(Span{blob.data + fb_off, fb_size});
  } else {
    program.ensure(blob);  // (the graph alone)
  }
  fb::Buffer fbuf{blob.data + fb_off, fb_size, "XNNPACK graph flatbuffer"};
  fb::Table root = fb::root(&fbuf, "XN01", "XN00");
  Graph g;
  fb::Vector xvalues = root.vector(2, 4);
  std::vector<uint32_t> const_idx(xvalues.size(), 0);
  std::vector<uint8_t> seen(xvalues.size(), 0);
  g.values.resize(xvalues.size());
  for (uint32_t i = 0; i < xvalues.size(); i++) {
    fb::Table xv = xvalues.table(i);
    fb::Table u = xv.table(1);
    fb::Table tv = !u ? u : xv.scalar<uint8_t>(0) == 1 ? u : u.table(0);
    uint32_t id = tv ? tv.scalar<uint32_t>(6) : kInvalidId;
    if (id >= xvalues.size() || seen[id]) bad("value id " + std::to_string(id) + " is out of range or repeated");
    seen[id] = 1;
    std::vector<uint32_t> ci;
    read_value(xv, g.values[id], ci);
    const_idx[id] = ci[0];
  }
  fb::Vector cdata = root.vector(8, 4);
  auto constant_bytes = [&](uint32_t ci) -> Span {
    if (ci >= cdata.size()) bad("constant index " + std::to_string(ci) + " out of range");
    fb::Table c = cdata.table(ci);
    std::string key = c.string(2);
    if (!key.empty()) {
      Span s = program.named_data(key, false);
      if (!s.data && s.size == 0) bad("named constant '" + key + "' is not in the program" + program.data_files_note());
      if (consumed) consumed->push_back(s);
      if (unkeyed && !content_key(key)) unkeyed->push_back(s);
      if (keyed && content_key(key)) keyed->emplace_back(s, key);
      return s;
    }
    uint64_t off = c.scalar<uint64_t>(0), size = c.scalar<uint64_t>(1);
    if (off > const_size || size > const_size - off) bad("constant data lies outside the blob");
    return Span{blob.data + const_off + off, (size_t)size};
  };
  // Nodes first: a float32 filter that only FullyConnected/Conv2d nodes read (as input 1) is
  // packed straight from the program's bytes at method load, never decoded into `data`.
  fb::Vector xnodes = root.vector(1, 4);
  g.nodes.resize(xnodes.size());
  for (uint32_t i = 0; i < xnodes.size(); i++) read_node(xnodes.table(i), g.nodes[i]);
  std::vector<uint8_t> packed_only(g.values.size(), 0);  // 0 unused, 1 packed filter only, 2 other use
  for (auto& n : g.nodes)
    for (size_t k = 0; k < n.inputs.size(); k++) {
      uint32_t id = n.inputs[k];
      if (id >= g.values.size()) continue;
      bool filter = k == 1 && (n.type == FullyConnected || n.type == Conv2d);
      packed_only[id] = filter && packed_only[id] != 2 ? 1 : 2;
    }
  for (auto& n : g.nodes) {
    if (n.output < g.values.size()) packed_only[n.output] = 2;
    if (n.output2 < g.values.size()) packed_only[n.output2] = 2;
  }
  for (uint32_t id : uint_list(root, 5))
    if (id < g.values.size()) packed_only[id] = 2;
  for (size_t i = 0; i < g.values.size(); i++) {
    Value& v = g.values[i];
    if (v.scale_buffer) {
      Span s = constant_bytes(v.scale_buffer);
      program.ensure(s);
      // ExecuTorch 1.3.1 writes per-channel-group (qb4w) scales as bfloat16, per-channel ones as float32
      bool bf16 = v.quant == Quant::PerChannelGroup;
      size_t width = bf16 ? 2 : 4;
      if ((size_t)v.num_scales * width > s.size) bad("quantization scale buffer is too small");
      v.scales.resize(v.num_scales);
      for (uint32_t k = 0; k < v.num_scales; k++) {
        if (bf16) {
          uint16_t h;
          std::memcpy(&h, s.data + k * 2, 2);
          v.scales[k] = bf16_to_float(h);
        } else {
          std::memcpy(&v.scales[k], s.data + k * 4, 4);
        }
      }
    }
    if (const_idx[i] == 0) continue;
    Span s = constant_bytes(const_idx[i]);
    const bool fp32 = v.dtype == FP32 || v.dtype == PFP32;
    const bool quantized_filter = packed_only[i] == 1 && !fp32;  // decoded where packed (Value::qraw)
    const bool float_filter = packed_only[i] == 1 && fp32 && v.quant == Quant::None &&
                              reinterpret_cast<uintptr_t>(s.data) % alignof(float) == 0;  // packed from the bytes
    if (quantized_filter || float_filter) {  // kept as the program's bytes until packed: checked here
      int64_t numel = 1;
      for (auto d : v.dims)
        if (d < 0 || etnp::mul_overflow(numel, d, &numel)) bad("constant has an invalid shape");
      if (elem_bytes(v.dtype, numel, v.dims) > s.size) bad("constant data is smaller than its tensor");
      v.shape = v.dims;
      v.is_constant = true;
      if (quantized_filter) {
        v.qraw = s.data;
        v.qraw_size = s.size;
      } else {
        v.raw = reinterpret_cast<const float*>(s.data);
      }
      v.source = s;
      continue;
    }
    program.ensure(s);
    decode_constant(v, s.data, s.size);
  }
  auto check_id = [&](uint32_t id, bool optional) {
    if (optional && id == kInvalidId) return;
    if (id >= g.values.size()) bad("node refers to value " + std::to_string(id) + " outside the graph");
  };
  for (auto& n : g.nodes) {
    for (size_t k = 0; k < n.inputs.size(); k++)
      check_id(n.inputs[k], (n.type == FullyConnected || n.type == Conv2d || n.type == DepthwiseConv2d ||
                             n.type == ConvTranspose2d) && k == 2 ? true : (n.type == ScaledDotProductAttention && k >= 3));
    check_id(n.output, false);
    if (n.type == ArgMaxPooling2d) check_id(n.output2, false);
    if (g.values[n.output].is_constant || (n.type == ArgMaxPooling2d && g.values[n.output2].is_constant))
      bad(std::string(node_type_name(n.type)) + " writes to a constant value");
    for (uint32_t id : n.inputs)
      if (id == n.output || (n.type == ArgMaxPooling2d && id == n.output2))
        bad(std::string(node_type_name(n.type)) + " writes to its own input");
  }
  for (uint32_t id : uint_list(root, 4)) { check_id(id, false); g.input_ids.push_back(id); }
  for (uint32_t id : uint_list(root, 5)) { check_id(id, false); g.output_ids.push_back(id); }
  check_defined_before_use(g, const_idx);
  bind_external_ids(g);
  return g;
}

}  // namespace etnp::xnn
