// The XNNPACK delegate's per-node work: weights prepared at load, value shapes and storage, the
// snapping of results to their datatype, and run_node, which dispatches to the node families
// (xnn_elementwise.cpp, xnn_layout.cpp, xnn_pooling.cpp, xnn_matmul.cpp, xnn_conv.cpp).
#include "delegates/xnnpack/xnn_node_util.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/dtype.h"
#include "kernels/compute/gemm.h"
#include "kernels/compute/half_convert.h"
#include "kernels/kernel_util.h"
#include "kernels/compute/qgemm.h"
#include "kernels/compute/quantize_row.h"
#include "util/compiler.h"

namespace etnp::xnn {

// ---- shared with the band pipeline (xnn_ops.h) ----
int64_t pool_dim(const Node& n, int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  // (a window past the padded input: a negative span, which division would round up to 0)
  const int64_t span = in + p0 + p1 - d * (k - 1) - 1;
  if (span < 0) fail(n, "output would be empty (the window is larger than the padded input)");
  return span / std::max<int64_t>(s, 1) + 1;
}
GemmEpilogue epilogue(const Node& n, const float* bias) {
  GemmEpilogue ep;
  ep.bias_col = bias;
  ep.min = n.out_min;
  ep.max = n.out_max;
  return ep;
}
void with_residual(GemmEpilogue& ep, const Node& n, const Value* r, int64_t offset, int64_t ldr) {
  if (!r) return;
  ep.residual = r->data.data() + offset;
  ep.ldr = ldr;
  ep.res_min = n.res_min;
  ep.res_max = n.res_max;
}
const float* bias_of(Graph& g, Node& n, int64_t channels) {
  if (!n.bias.empty()) {
    if ((int64_t)n.bias.size() < channels) fail(n, "bias is smaller than the output channels");
    return n.bias.data();
  }
  Value* b = opt_in(g, n, 2);
  if (b && b->numel() < channels) fail(n, "bias is smaller than the output channels");
  return b ? b->data.data() : nullptr;
}

void ensure_shape(Value& v, const std::vector<int64_t>& shape) {
  constexpr int64_t kMaxElems = int64_t(1) << 32;  // 16 GiB of float32
  int64_t total = 1;
  for (auto d : shape)
    if (d < 0 || etnp::mul_overflow(total, d, &total) || total > kMaxElems)
      throw_exec("XNNPACK value of shape " + shape_str(shape) + " is too large (corrupt program?)");
  v.shape = shape;
  size_t n = (size_t)total;
  if (v.data.size() < n && !v.as_codes) v.data.resize(n);  // (codes: their writer sizes q8)
}

bool on_int8_grid(const Value& v) { return v.quant == Quant::PerTensor && (v.dtype == QINT8 || v.dtype == QUINT8); }

Int8Grid grid_of(const Value& v) {
  const float zp = (float)v.zero_point;
  return {1.f / v.scale, (v.dtype == QINT8 ? -128.f : 0.f) - zp, (v.dtype == QINT8 ? 127.f : 255.f) - zp, v.scale};
}

void finalize_range(const Value& v, const float* x, float* d, int64_t n) {
  if (v.dtype == FP16) {
    round_to_half(x, d, n);
  } else if (v.dtype == BF16) {
    round_to_bf16(x, d, n);
  } else if (on_int8_grid(v)) {
    snap_to_grid(grid_of(v), x, d, n);
  } else if (x != d) {
    copy_floats(d, x, n);
  }
}

void finalize_value(KernelContext& ctx, Value& v, const float* src) {
  const int64_t n = v.numel();
  float* d = v.data.data();
  const float* x = src ? src : d;  // (src: the values, v.data written here)
  if (!dynamically_quantized(v)) {
    const bool rounds = v.dtype == FP16 || v.dtype == BF16, snaps = on_int8_grid(v);
    if (!src && !rounds && !snaps) return;  // float32 in place: as it is
    // (fp16 / bf16 rounding and snapping from 64 Ki, copying from 256 Ki elements a share)
    const int64_t grain = rounds || snaps ? int64_t(1) << 16 : int64_t(1) << 18;
    parallel(ctx, n, grain, [&](int64_t b, int64_t e) { finalize_range(v, x + b, d + b, e - b); });
    return;
  }
  // dynamic asymmetric int8 per token (rows of the trailing `nonbatch_dims` dims)
  int nb = std::max(1, std::min<int>(v.nonbatch_dims, (int)v.shape.size()));
  int64_t len = 1;
  for (size_t k = v.shape.size() - nb; k < v.shape.size(); k++) len *= v.shape[k];
  int64_t rows = len > 0 ? (n + len - 1) / len : 0;
  v.row_len = len;
  v.row_scale.assign((size_t)rows, 1.f);  // an all-zero row: q = 0, zero point 0
  v.row_zp.assign((size_t)rows, 0);
  v.q8.resize((size_t)n);
  // rows across threads (each row's parameters and codes are its own), at least 2 Ki elements
  // a share
  parallel(ctx, rows, std::max<int64_t>(1, 2048 / std::max<int64_t>(len, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* xr = x + r * len;
      const int64_t m = std::min(len, n - r * len);
      float mn = 0.f, mx = 0.f;
      row_min_max(xr, m, mn, mx);
      if (mx == mn) {  // all zeros: q = 0
        std::memset(v.q8.data() + r * len, 128, (size_t)m);
        if (src) std::copy(xr, xr + m, d + r * len);  // (the values as they are)
        continue;
      }
      const Qd8Params p = qd8_params(mn, mx);  // (XNNPACK's, in float32)
      v.row_scale[(size_t)r] = p.scale;
      v.row_zp[(size_t)r] = p.zp;
      quantize_row_q8(xr, m, p, d + r * len, v.q8.data() + r * len);
    }
  });
}

void filter_int8_values(const Value& w, int64_t OC, int64_t K, int oc_dim, const float* scales, Int8Values& values) {
  if (w.qraw && (w.dtype == QCINT8 || w.dtype == QINT8) && w.zero_point == 0) {
    // the program's int8 bytes themselves (what the decoded grid points divided by their scale
    // give back for any finite non-zero scale), in the same element order
    values.at = reinterpret_cast<const int8_t*>(w.qraw);
    return;
  }
  std::vector<int8_t>& q = values.own;
  q.resize((size_t)(OC * K));
  values.at = q.data();
  if (w.qraw && w.dtype == QCINT4 && oc_dim == 0 && w.dims.size() == 2 && w.dims[1] == K) {  // nibbles, low first, zero point 8; rows padded to bytes
    const int64_t row_bytes = (K + 1) / 2;
    for (int64_t oc = 0; oc < OC; oc++)
      for (int64_t k = 0; k < K; k++) {
        const uint8_t b = w.qraw[oc * row_bytes + k / 2];
        q[(size_t)(oc * K + k)] = (int8_t)(((k & 1) ? b >> 4 : b & 15) - 8);
      }
    return;
  }
  // the filter's int8 values are its decoded grid points divided by the channel scale
  if (!w.raw && (int64_t)w.data.size() < OC * K) throw_load("XNNPACK delegate: a filter's values are missing");
  const float* f = w.cdata();
  for (int64_t i = 0; i < OC * K; i++) q[(size_t)i] = int8_value(f[i], scales[oc_dim == 0 ? i / K : i % OC]);
}

namespace {
// A convolution filter of OC x KH x KW taps of ICg floats whose tap (i, j) is tap src(i, j) of
// `f`, a filter of OC x KH0 x KW0 such taps
template <class Src>
std::vector<float> taps_from(const float* f, int64_t OC, int64_t KH, int64_t KW, int64_t ICg, int64_t KH0, int64_t KW0,
                             Src src) {
  std::vector<float> out((size_t)(OC * KH * KW * ICg));
  for (int64_t oc = 0; oc < OC; oc++)
    for (int64_t i = 0; i < KH; i++)
      for (int64_t j = 0; j < KW; j++) {
        const std::pair<int64_t, int64_t> t = src(i, j);
        std::memcpy(&out[(size_t)(((oc * KH + i) * KW + j) * ICg)], f + ((oc * KH0 + t.first) * KW0 + t.second) * ICg,
                    (size_t)ICg * sizeof(float));
      }
  return out;
}
}  // namespace

void prepare_node(ThreadPool* pool, Graph& g, Node& n) {
  auto constant = [&](size_t k) -> Value* {
    Value* v = k < n.inputs.size() && n.inputs[k] != kInvalidId ? &g.values[n.inputs[k]] : nullptr;
    return v && v->is_constant ? v : nullptr;
  };
  if (Value* b = constant(2)) {
    if (n.type == FullyConnected || n.type == Conv2d || n.type == DepthwiseConv2d || n.type == ConvTranspose2d) n.bias.assign(b->data.begin(), b->data.end());
  }
  Value* w = constant(1);
  if (!w) return;
  const Value* x = n.inputs.empty() || n.inputs[0] >= g.values.size() ? nullptr : &g.values[n.inputs[0]];
  // a quantized filter kept as the program's bytes (Value::qraw): the int8 / 4-bit paths read
  // those; float32 is decoded only for a float packing, and only for this node
  struct Decoded {
    Value* w;
    bool made = false;
    const float* floats() {
      if (w->qraw && w->data.empty()) {
        decode_constant(*w, w->qraw, w->qraw_size);
        made = true;
      }
      return w->cdata();
    }
    ~Decoded() {
      if (made) w->data.release();
    }
  } decoded{w};
  // a float16 filter: float16 panels (pack_b keeps float32 ones where a value is not a float16)
  const bool half = w->dtype == FP16;
  if (n.type == FullyConnected) {
    if (w->dims.size() != 2) fail(n, "filter must be 2-D");
    bool tw = n.flags & kTransposeWeights;
    int64_t IC = tw ? w->dims[0] : w->dims[1], OC = tw ? w->dims[1] : w->dims[0];
    if (x && x->dtype == QDINT8 && w->dtype == QCINT8 && w->quant == Quant::PerChannel && w->zero_point == 0 &&
        w->channel_dim == (tw ? 1 : 0) && (int64_t)w->scales.size() >= OC && IC > 0 && OC > 0 &&
        IC <= 32768) {  // int32 sums of up to 32768 products of 255 * 128 (and the zero-point term) cannot overflow
      // qd8 x qc8w
      Int8Values q;
      filter_int8_values(*w, OC, IC, tw ? 1 : 0, w->scales.data(), q);
      n.qpacked = pack_q8(IC, OC, q.data(), tw ? OC : 1, tw ? 1 : IC, w->scales.data(), pool);
      return;
    }
    if (prepare_fc_q8(pool, x, n, *w, IC, OC, tw)) return;  // static int8: the int8 filter only
    if (prepare_fc_q4w(pool, x, n, *w, IC, OC, tw)) return;  // qd8 x qb4w / qc4w: the 4-bit filter only
    n.packed.push_back(pack_b(pool, IC, OC, decoded.floats(), tw ? OC : 1, tw ? 1 : IC, half));
  } else if (n.type == Conv2d) {
    if (w->dims.size() != 4) fail(n, "filter must be 4-D");
    int64_t K = (int64_t)n.kh * n.kw * n.group_in, OCg = n.group_out;
    const int64_t OC = (int64_t)n.groups * OCg, ICg = n.group_in;
    if (n.filter_kh) {  // (lower_dead_taps: the taps kept, a window of the filter's)
      if (w->dims[0] != OC || w->dims[1] != n.filter_kh || w->dims[2] != n.filter_kw || w->dims[3] != ICg ||
          n.tap_row0 + n.kh > n.filter_kh || n.tap_col0 + n.kw > n.filter_kw)
        fail(n, "filter shape mismatch");
    } else if (w->dims[0] != OC || w->dims[1] * w->dims[2] * w->dims[3] != K) {
      fail(n, "filter shape mismatch");
    }
    if (n.filter_taps_major) {  // (lower_depthwise_as_conv: one group of one input channel)
      n.packed.push_back(pack_b(pool, K, OCg, decoded.floats(), OCg, 1, half));
      return;
    }
    // the filter in the order the packing reads it, where that is not its own: a stride-1
    // transposed convolution's taps reversed (lower_stride1_deconv_as_conv), or the window of taps
    // that read the image (lower_dead_taps)
    std::vector<float> taps;
    if (n.filter_flipped)
      taps = taps_from(decoded.floats(), OC, n.kh, n.kw, ICg, n.kh, n.kw,
                       [&](int64_t i, int64_t j) { return std::make_pair(n.kh - 1 - i, n.kw - 1 - j); });
    else if (n.filter_kh)
      taps = taps_from(decoded.floats(), OC, n.kh, n.kw, ICg, n.filter_kh, n.filter_kw,
                       [&](int64_t i, int64_t j) { return std::make_pair(n.tap_row0 + i, n.tap_col0 + j); });
    else
      prepare_conv_q8(pool, x, n, *w);
    // a static-int8 convolution runs on qconv: its float packing is made only if fusion keeps it
    // (pack_deferred, after fuse_nodes); until then it is a placeholder of the right shape
    const bool defer = !n.qconv.empty();
    for (uint32_t gi = 0; gi < n.groups; gi++) {
      if (defer) {
        PackedB p;
        p.K = K;
        p.N = OCg;
        n.packed.push_back(std::move(p));
      } else {
        const float* f = taps.empty() ? decoded.floats() : taps.data();
        n.packed.push_back(pack_b(pool, K, OCg, f + gi * OCg * K, 1, K, half));
      }
    }
  } else if (n.type == ConvTranspose2d) {
    if (w->dims.size() != 4 || w->dims[0] != (int64_t)n.groups * n.group_out || w->dims[1] != n.kh ||
        w->dims[2] != n.kw || w->dims[3] != n.group_in)
      fail(n, "filter shape mismatch");
    prepare_deconv(pool, n, decoded.floats(), half);
  } else if (n.type == DepthwiseConv2d) {
    decoded.floats();  // (never kept as bytes: a depthwise filter is read at run time)
    prepare_dw_q8(x, n, *w);
  }
}

void pack_deferred(const Program& program, ThreadPool* pool, Graph& g, Node& n) {
  if (n.type != Conv2d || n.packed.empty() || !n.packed[0].empty() || n.inputs.size() < 2 ||
      n.inputs[1] >= g.values.size())
    return;
  Value& w = g.values[n.inputs[1]];
  program.ensure(w.source);  // (read back: given back once the node's int8 packing was made)
  const bool made = w.qraw && w.data.empty();
  if (made) decode_constant(w, w.qraw, w.qraw_size);
  const int64_t K = n.packed[0].K, OCg = n.packed[0].N;
  if ((int64_t)w.data.size() < (int64_t)n.groups * OCg * K) fail(n, "filter data is missing");
  for (uint32_t gi = 0; gi < n.groups && gi < n.packed.size(); gi++)
    n.packed[gi] = pack_b(pool, K, OCg, w.cdata() + gi * OCg * K, 1, K, w.dtype == FP16);
  if (made) w.data.release();
}

bool moves_grid_points(const Graph& g, const Node& n) {
  switch (n.type) {
    case StaticTranspose: case StaticReshape: case StaticSlice: case Copy: case MaxPooling2d:
    case Concatenate2: case Concatenate3: case Concatenate4: case Concatenate5: break;
    default: return false;
  }
  const Value& o = g.values[n.output];
  if (!on_int8_grid(o) || std::isfinite(n.out_min) || std::isfinite(n.out_max) || n.inputs.empty()) return false;
  for (uint32_t id : n.inputs)
    if (!same_grid(g.values[id], o)) return false;
  return true;
}

void run_node(KernelContext& ctx, Graph& g, Node& n, Scratch& s) {
  if (!run_elementwise(ctx, g, n, s)) switch (n.type) {
    case StaticTranspose: transpose(ctx, g, n); break;
    case StaticReshape: reshape(ctx, g, n, s); break;
    case StaticSlice: slice(ctx, g, n); break;
    case StaticConstantPad: pad(ctx, g, n); break;
    case Concatenate2: case Concatenate3: case Concatenate4: case Concatenate5: concat(ctx, g, n); break;
    case StaticResizeBilinear2D: resize_bilinear(g, n); break;
    case MaxPooling2d: pool(ctx, g, n, true, nullptr); break;
    case AvgPooling2d: pool(ctx, g, n, false, nullptr); break;
    case ArgMaxPooling2d: pool(ctx, g, n, true, &g.values[n.output2]); break;
    case GlobalAvgPooling2d: global_avg_pool(ctx, g, n); break;
    case FullyConnected: fully_connected(ctx, g, n, s); break;
    case Conv2d: conv2d(ctx, g, n, s); break;
    case DepthwiseConv2d:
      if ((n.pre || n.post) && band_pipeline(ctx, g, n)) break;
      if (n.pre) run_node(ctx, g, *n.pre, s);  // shapes the band pipeline cannot take: step by step
      if (n.post) {  // the depthwise step writes its own result, then the projection runs
        Value& d = g.values[n.post->inputs[0]];
        if (!depthwise(ctx, g, n, d, s)) finalize_value(ctx, d);
        run_node(ctx, g, *n.post, s);
      } else {
        n.snapped = depthwise(ctx, g, n, out(g, n), s);
      }
      break;
    case ConvTranspose2d: deconv(ctx, g, n); break;
    case BatchMatrixMultiply: batch_matmul(ctx, g, n); break;
    case ScaledDotProductAttention: sdpa(g, n); break;
    default: fail(n, "node type is not implemented");
  }
  const bool added = n.residual_pending;  // (then the output is the add's, not the GEMM's)
  if (n.residual_pending) {  // a fused residual add whose shapes differed: the add itself
    Value &x = g.values[n.unfused], &r = g.values[n.residual], &o = out(g, n);
    add_values(ctx, x, r, o);
    clamp_values(o, n.res_min, n.res_max);
    n.residual_pending = false;
  }
  Value& o = out(g, n);
  // the GEMM-based nodes clamp in their epilogue; a node that finished its output (Node::snapped)
  // has clamped it too, or has no clamp
  if (!n.snapped && n.type != FullyConnected && n.type != Conv2d && n.type != DepthwiseConv2d &&
      n.type != ConvTranspose2d && n.type != BatchMatrixMultiply)
    clamp_output(n, o);
  if (!n.snapped && !added && moves_grid_points(g, n)) n.snapped = true;
  if (!n.snapped || added) finalize_value(ctx, o);  // (a static-int8 GEMM may have snapped it already)
  n.snapped = false;
  if (n.type == ArgMaxPooling2d) finalize_value(ctx, g.values[n.output2]);
}

}  // namespace etnp::xnn
