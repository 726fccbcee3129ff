#include "delegates/xnnpack/xnn_ops.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/column_sums.h"
#include "kernels/cpu_features.h"
#include "kernels/depthwise.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/quantize_row.h"
#include "kernels/vec_math.h"
#include "runtime/dtype.h"

namespace etnp::xnn {

namespace {

constexpr uint32_t kTransposeWeights = 0x1;
constexpr uint32_t kAlignCorners = 0x8;

// Clamp to an integer range before a cast; NaN goes to lo (casting NaN or out-of-range
// doubles to an integer type is undefined).
inline double clamp_q(double v, double lo, double hi) { return v >= lo ? (v <= hi ? v : hi) : lo; }

[[noreturn]] void fail(const Node& n, const std::string& m) { throw_exec(std::string(node_type_name(n.type)) + ": " + m); }

Value& in(Graph& g, const Node& n, size_t k) {
  uint32_t id = n.inputs.at(k);
  Value& v = g.values[id];
  if (!v.is_constant && v.data.size() < (size_t)v.numel()) fail(n, "input " + std::to_string(k) + " has no data");
  return v;
}
Value* opt_in(Graph& g, const Node& n, size_t k) {
  return k < n.inputs.size() && n.inputs[k] != kInvalidId ? &g.values[n.inputs[k]] : nullptr;
}
Value& out(Graph& g, const Node& n) { return g.values[n.output]; }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

Tensor wrap(Value& v) {
  Tensor t;
  t.dtype = DType::F32;
  t.dim = (int)v.shape.size();
  for (int i = 0; i < t.dim; i++) { t.sizes[i] = v.shape[i]; t.dim_order[i] = (uint8_t)i; }
  t.compute_strides();
  t.data = v.data.data();
  t.capacity = v.data.size() * sizeof(float);
  t.dynamism = Dynamism::Bound;
  return t;
}

void clamp_values(Value& o, float lo, float hi) {
  if (!std::isfinite(lo) && !std::isfinite(hi)) return;
  float* d = o.data.data();
  for (int64_t i = 0, e = o.numel(); i < e; i++) d[i] = std::min(std::max(d[i], lo), hi);
}
void clamp_output(const Node& n, Value& o) { clamp_values(o, n.out_min, n.out_max); }

}  // namespace

// ---- shared with the band pipeline (xnn_ops.h) ----
int64_t pool_dim(const Node& n, int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  int64_t o = (in + p0 + p1 - d * (k - 1) - 1) / std::max<int64_t>(s, 1) + 1;
  if (o <= 0) fail(n, "output would be empty");
  return o;
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

namespace {

// ---- elementwise ----
// Elements of `v` repeat with period `len` along the output when v is one element (len 1) or its
// shape, leading 1s dropped, is a suffix of the output's shape (len = v's element count); 0 otherwise.
int64_t repeat_period(const Value& v, const std::vector<int64_t>& out_shape) {
  int64_t nv = v.numel();
  if (nv == 1) return 1;
  size_t lead = 0;
  while (lead < v.shape.size() && v.shape[lead] == 1) lead++;
  size_t rank = v.shape.size() - lead;
  if (rank > out_shape.size()) return 0;
  for (size_t k = 0; k < rank; k++)
    if (v.shape[lead + k] != out_shape[out_shape.size() - rank + k]) return 0;
  return nv;
}

// float32 loops for the common layouts (same shape, a scalar, or a trailing block such as a
// per-channel vector); false leaves other broadcasts to the generic path. The arithmetic is
// float32's: for + - * / min max that equals the generic path's double result rounded to float.
template <typename F>
bool binary_f32(KernelContext& ctx, Value& a, Value& b, Value& o, F f) {
  int64_t n = o.numel(), pa = repeat_period(a, o.shape), pb = repeat_period(b, o.shape);
  if (n == 0) return true;
  if (!pa || !pb || (pa != n && pb != n) || (pa != n && n % pa) || (pb != n && n % pb)) return false;
  const float* x = a.data.data();
  const float* y = b.data.data();
  float* z = o.data.data();
  if (pa == n && pb == n) {
    parallel(ctx, n, 1 << 18, [&](int64_t s, int64_t e) {  // bandwidth-bound: split only large ones
      for (int64_t i = s; i < e; i++) z[i] = f(x[i], y[i]);
    });
    return true;
  }
  bool a_full = pa == n;
  int64_t len = a_full ? pb : pa;  // period of the repeating operand
  const float* full = a_full ? x : y;
  const float* rep = a_full ? y : x;
  parallel(ctx, n / len, std::max<int64_t>(1, (1 << 18) / len), [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; r++) {
      const float* u = full + r * len;
      float* w = z + r * len;
      if (a_full) for (int64_t j = 0; j < len; j++) w[j] = f(u[j], rep[j]);
      else for (int64_t j = 0; j < len; j++) w[j] = f(rep[j], u[j]);
    }
  });
  return true;
}

template <typename F>
void binary_values(KernelContext& ctx, Value& a, Value& b, Value& o, BinaryD f, F ff) {
  Tensor ta = wrap(a), tb = wrap(b);
  ensure_shape(o, broadcast_shapes(ta, tb));
  if (binary_f32(ctx, a, b, o, ff)) return;
  Tensor to = wrap(o);
  binary_apply(ctx, ta, tb, to, f, nullptr);
}
template <typename F>
void binary(KernelContext& ctx, Graph& g, Node& n, BinaryD f, F ff) {
  binary_values(ctx, in(g, n, 0), in(g, n, 1), out(g, n), f, ff);
}
struct AddF { float operator()(float x, float y) const { return x + y; } };
struct SubF { float operator()(float x, float y) const { return x - y; } };
struct MulF { float operator()(float x, float y) const { return x * y; } };
struct DivF { float operator()(float x, float y) const { return x / y; } };
struct MinF { float operator()(float x, float y) const { return x != x || y != y ? x + y : (y < x ? y : x); } };
struct MaxF { float operator()(float x, float y) const { return x != x || y != y ? x + y : (x < y ? y : x); } };
struct PreluF { float operator()(float x, float s) const { return x > 0 ? x : x * s; } };
template <typename F>
void unary(KernelContext& ctx, Graph& g, Node& n, F f) {
  Value &a = in(g, n, 0), &o = out(g, n);
  ensure_shape(o, a.shape);
  Tensor ta = wrap(a), to = wrap(o);
  unary_apply_fn(ctx, ta, to, f);
}
// float32 elementwise functions of kernels/vec_math.h, split across threads when large
void unary_vec(KernelContext& ctx, Graph& g, Node& n, void (*f)(const float*, float*, int64_t)) {
  Value &a = in(g, n, 0), &o = out(g, n);
  ensure_shape(o, a.shape);
  const float* x = a.cdata();
  float* y = o.data.data();
  parallel(ctx, a.numel(), 1 << 14, [&](int64_t b, int64_t e) { f(x + b, y + b, e - b); });
}
double add_f(double x, double y) { return x + y; }
double sub_f(double x, double y) { return x - y; }
double mul_f(double x, double y) { return x * y; }
double div_f(double x, double y) { return x / y; }
double min_f(double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); }
double max_f(double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }
double prelu_f(double x, double s) { return x > 0 ? x : x * s; }

void softmax(KernelContext& ctx, Graph& g, Node& n) {
  Value &a = in(g, n, 0), &o = out(g, n);
  ensure_shape(o, a.shape);
  int64_t len = a.shape.empty() ? 1 : a.shape.back(), rows = a.numel() / std::max<int64_t>(len, 1);
  const float* x = a.cdata();
  float* y = o.data.data();
  parallel(ctx, rows, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(len, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) vec_softmax_row(x + r * len, y + r * len, len);
  });
}

// ---- layout ----
// Permutations that, once runs of adjacent dims are merged, swap the last two of [B, R, S]
// (NCHW <-> NHWC is one): out[b][s][r] = in[b][r][s], copied in cache-sized blocks.
bool transpose_as_batched_2d(KernelContext& ctx, const Value& a, const std::vector<int64_t>& perm, Value& o) {
  // merged runs of input dims (size-1 dims dropped), in output order: size, first and last input dim
  int64_t md[8], mf[8], ml[8];
  size_t nm = 0;
  for (size_t i = 0; i < perm.size(); i++) {
    int64_t d = perm[i], size = a.shape[d];
    if (size == 1) continue;
    if (nm && d > ml[nm - 1]) {
      bool adjacent = true;  // every dim between the run's last and d must be 1
      for (int64_t k = ml[nm - 1] + 1; k < d; k++) adjacent = adjacent && a.shape[k] == 1;
      if (adjacent) { md[nm - 1] *= size; ml[nm - 1] = d; continue; }
    }
    md[nm] = size;
    mf[nm] = ml[nm] = d;
    nm++;
  }
  if (nm <= 1) {  // the same element order
    copy_floats(o.data.data(), a.cdata(), o.numel());
    return true;
  }
  int64_t B = 1, R, S;
  if (nm == 2 && mf[0] > mf[1]) { R = md[1]; S = md[0]; }
  else if (nm == 3 && mf[0] < mf[1] && mf[0] < mf[2] && mf[1] > mf[2]) { B = md[0]; R = md[2]; S = md[1]; }
  else return false;
  const float* x = a.cdata();  // the caller's tensor when the delegate input is read in place
  float* y = o.data.data();
  constexpr int64_t T = 32;
  const int64_t sblocks = (S + T - 1) / T;
  // tasks: (batch, block of T output rows s), each covering every r
  // a bandwidth-bound copy: split only when it is large (a second core mostly adds cache traffic)
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 19) / std::max<int64_t>(1, R * T));
  parallel(ctx, B * sblocks, grain, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; t++) {
      int64_t b = t / sblocks, s0 = (t % sblocks) * T, s1 = std::min(S, s0 + T);
      const float* xb = x + b * R * S;
      float* yb = y + b * R * S;
      if (R == 3) {  // RGB images: NCHW <-> NHWC of the network input
        for (int64_t s = s0; s < s1; s++) {
          yb[s * 3] = xb[s];
          yb[s * 3 + 1] = xb[S + s];
          yb[s * 3 + 2] = xb[2 * S + s];
        }
        continue;
      }
      for (int64_t r0 = 0; r0 < R; r0 += T) {
        int64_t r1 = std::min(R, r0 + T);
        for (int64_t s = s0; s < s1; s++)
          for (int64_t r = r0; r < r1; r++) yb[s * R + r] = xb[r * S + s];
      }
    }
  });
  return true;
}

void transpose(KernelContext& ctx, Graph& g, Node& n) {
  Value &a = in(g, n, 0), &o = out(g, n);
  size_t nd = a.shape.size();
  if (n.ints.size() != nd) fail(n, "permutation rank differs from input rank");
  if (nd > 8) fail(n, "rank " + std::to_string(nd) + " is above 8");
  std::vector<int64_t> s(nd);
  int64_t st[8], in_st[8];
  int64_t acc = 1;
  for (size_t i = nd; i-- > 0;) { in_st[i] = acc; acc *= a.shape[i]; }
  unsigned seen = 0;
  for (size_t i = 0; i < nd; i++) {
    if (n.ints[i] >= (int64_t)nd || (seen & (1u << n.ints[i]))) fail(n, "invalid permutation");
    seen |= 1u << n.ints[i];
    s[i] = a.shape[n.ints[i]];
    st[i] = in_st[n.ints[i]];
  }
  ensure_shape(o, s);
  if (transpose_as_batched_2d(ctx, a, n.ints, o)) return;
  int64_t total = o.numel(), idx[8] = {};
  const float* src = a.cdata();
  for (int64_t k = 0; k < total; k++) {
    int64_t off = 0;
    for (size_t d = 0; d < nd; d++) off += idx[d] * st[d];
    o.data[k] = src[off];
    for (size_t d = nd; d-- > 0;) { if (++idx[d] < s[d]) break; idx[d] = 0; }
  }
}
void reshape(Graph& g, Node& n) {
  Value &a = in(g, n, 0), &o = out(g, n);
  std::vector<int64_t> s = n.ints;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == 0) { if (infer >= 0) fail(n, "more than one inferred dimension"); infer = (int64_t)i; }
    else if (s[i] < 0 || __builtin_mul_overflow(known, s[i], &known)) fail(n, "invalid reshape size");
  }
  if (infer >= 0) s[infer] = known ? a.numel() / known : 0;
  int64_t total = 1;
  for (auto d : s)
    if (__builtin_mul_overflow(total, d, &total)) fail(n, "invalid reshape size");
  if (total != a.numel()) fail(n, "cannot reshape " + shape_str(a.shape) + " to " + shape_str(s));
  ensure_shape(o, s);
  if (&o != &a) copy_floats(o.data.data(), a.data.data(), total);
}
void copy_value(Graph& g, Node& n) {
  Value &a = in(g, n, 0), &o = out(g, n);
  ensure_shape(o, a.shape);
  copy_floats(o.data.data(), a.data.data(), a.numel());
}
void slice(Graph& g, Node& n) {
  Value &a = in(g, n, 0), &o = out(g, n);
  size_t nd = a.shape.size();
  if (n.ints.size() != nd || n.ints2.size() != nd) fail(n, "slice rank mismatch");
  std::vector<int64_t> s(nd), st(nd);
  int64_t acc = 1, base = 0;
  for (size_t i = nd; i-- > 0;) { st[i] = acc; acc *= a.shape[i]; }
  for (size_t i = 0; i < nd; i++) {
    int64_t off = n.ints[i], sz = n.ints2[i] == 0 ? a.shape[i] - off : n.ints2[i];
    if (off < 0 || sz < 0 || off + sz > a.shape[i]) fail(n, "slice out of bounds for " + shape_str(a.shape));
    s[i] = sz;
    base += off * st[i];
  }
  ensure_shape(o, s);
  int64_t total = o.numel(), idx[8] = {};
  for (int64_t k = 0; k < total; k++) {
    int64_t off = base;
    for (size_t d = 0; d < nd; d++) off += idx[d] * st[d];
    o.data[k] = a.data[off];
    for (size_t d = nd; d-- > 0;) { if (++idx[d] < s[d]) break; idx[d] = 0; }
  }
}
void pad(Graph& g, Node& n) {
  Value &a = in(g, n, 0), &o = out(g, n);
  size_t nd = a.shape.size();
  if (n.ints.size() != nd || n.ints2.size() != nd) fail(n, "padding rank mismatch");
  std::vector<int64_t> s(nd), ist(nd);
  int64_t acc = 1;
  for (size_t i = nd; i-- > 0;) { ist[i] = acc; acc *= a.shape[i]; }
  for (size_t i = 0; i < nd; i++) s[i] = a.shape[i] + n.ints[i] + n.ints2[i];
  ensure_shape(o, s);
  int64_t total = o.numel(), idx[8] = {};
  for (int64_t k = 0; k < total; k++) {
    int64_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < nd; d++) {
      int64_t j = idx[d] - n.ints[d];
      if (j < 0 || j >= a.shape[d]) { inside = false; break; }
      off += j * ist[d];
    }
    o.data[k] = inside ? a.data[off] : n.fparam;
    for (size_t d = nd; d-- > 0;) { if (++idx[d] < s[d]) break; idx[d] = 0; }
  }
}
void concat(Graph& g, Node& n) {
  Value& a0 = in(g, n, 0);
  size_t nd = a0.shape.size();
  if (n.axis >= nd) fail(n, "axis out of range");
  std::vector<int64_t> s = a0.shape;
  s[n.axis] = 0;
  for (size_t k = 0; k < n.inputs.size(); k++) {
    Value& a = in(g, n, k);
    if (a.shape.size() != nd) fail(n, "inputs differ in rank");
    for (size_t d = 0; d < nd; d++)
      if (d != n.axis && a.shape[d] != a0.shape[d]) fail(n, "inputs differ in shape");
    s[n.axis] += a.shape[n.axis];
  }
  Value& o = out(g, n);
  ensure_shape(o, s);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < n.axis; d++) outer *= s[d];
  for (size_t d = n.axis + 1; d < nd; d++) inner *= s[d];
  int64_t off = 0;
  for (size_t k = 0; k < n.inputs.size(); k++) {
    Value& a = in(g, n, k);
    int64_t run = a.shape[n.axis] * inner;
    for (int64_t r = 0; r < outer; r++)
      copy_floats(o.data.data() + r * s[n.axis] * inner + off, a.data.data() + r * run, run);
    off += run;
  }
}
void resize_bilinear(Graph& g, Node& n) {  // NHWC
  Value &a = in(g, n, 0), &o = out(g, n);
  if (a.shape.size() != 4) fail(n, "expects a 4-D NHWC input");
  int64_t N = a.shape[0], H = a.shape[1], W = a.shape[2], C = a.shape[3], OH = n.new_h, OW = n.new_w;
  ensure_shape(o, {N, OH, OW, C});
  bool align = n.flags & kAlignCorners;
  auto src = [&](int64_t i, int64_t in_n, int64_t out_n, int64_t& i0, int64_t& i1, float& l) {
    double v = align ? (out_n > 1 ? (double)i * (in_n - 1) / (out_n - 1) : 0.0)
                     : std::max(0.0, (i + 0.5) * ((double)in_n / out_n) - 0.5);
    i0 = std::min((int64_t)v, in_n - 1);
    i1 = std::min(i0 + 1, in_n - 1);
    l = (float)(v - i0);
  };
  for (int64_t b = 0; b < N; b++)
    for (int64_t oh = 0; oh < OH; oh++) {
      int64_t h0, h1;
      float lh;
      src(oh, H, OH, h0, h1, lh);
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t w0, w1;
        float lw;
        src(ow, W, OW, w0, w1, lw);
        const float* p00 = &a.data[((b * H + h0) * W + w0) * C];
        const float* p01 = &a.data[((b * H + h0) * W + w1) * C];
        const float* p10 = &a.data[((b * H + h1) * W + w0) * C];
        const float* p11 = &a.data[((b * H + h1) * W + w1) * C];
        float* y = &o.data[((b * OH + oh) * OW + ow) * C];
        for (int64_t c = 0; c < C; c++)
          y[c] = (1 - lh) * ((1 - lw) * p00[c] + lw * p01[c]) + lh * ((1 - lw) * p10[c] + lw * p11[c]);
      }
    }
}

// ---- pooling (NHWC) ----
void pool(KernelContext& ctx, Graph& g, Node& n, bool is_max, Value* indices) {
  Value &a = in(g, n, 0), &o = out(g, n);
  if (a.shape.size() != 4) fail(n, "expects a 4-D NHWC input");
  int64_t N = a.shape[0], H = a.shape[1], W = a.shape[2], C = a.shape[3];
  int64_t OH = pool_dim(n, H, n.kh, n.sh, n.dh, n.pad_top, n.pad_bottom), OW = pool_dim(n, W, n.kw, n.sw, n.dw, n.pad_left, n.pad_right);
  ensure_shape(o, {N, OH, OW, C});
  if (indices) ensure_shape(*indices, {N, OH, OW, C});
  const int64_t row_work = std::max<int64_t>(1, OW * C * n.kh * n.kw);
  parallel(ctx, N * OH, std::max<int64_t>(1, (int64_t(1) << 14) / row_work), [&](int64_t b, int64_t e) {
    thread_local std::vector<float> acc;  // per thread, grow only
    thread_local std::vector<int64_t> cnt_or_idx;
    acc.resize((size_t)C);
    cnt_or_idx.resize((size_t)C);
    for (int64_t r = b; r < e; r++) {
      int64_t bn = r / OH, oh = r % OH;
      for (int64_t ow = 0; ow < OW; ow++) {
        std::fill(acc.begin(), acc.end(), is_max ? -INFINITY : 0.f);
        std::fill(cnt_or_idx.begin(), cnt_or_idx.end(), 0);
        int64_t count = 0;
        for (int64_t i = 0; i < (int64_t)n.kh; i++) {
          int64_t ih = oh * n.sh - n.pad_top + i * n.dh;
          if (ih < 0 || ih >= H) continue;
          for (int64_t j = 0; j < (int64_t)n.kw; j++) {
            int64_t iw = ow * n.sw - n.pad_left + j * n.dw;
            if (iw < 0 || iw >= W) continue;
            const float* x = &a.data[((bn * H + ih) * W + iw) * C];
            count++;
            if (is_max && indices) {
              for (int64_t c = 0; c < C; c++)
                if (x[c] > acc[c]) { acc[c] = x[c]; cnt_or_idx[c] = i * n.kw + j; }
            } else if (is_max) {
              float* m = acc.data();
              for (int64_t c = 0; c < C; c++) m[c] = x[c] > m[c] ? x[c] : m[c];  // NaN passed over, as above
            } else {
              for (int64_t c = 0; c < C; c++) acc[c] += x[c];
            }
          }
        }
        float* y = &o.data[((bn * OH + oh) * OW + ow) * C];
        for (int64_t c = 0; c < C; c++) y[c] = is_max ? acc[c] : acc[c] / (float)std::max<int64_t>(count, 1);
        if (indices)
          for (int64_t c = 0; c < C; c++) indices->data[((bn * OH + oh) * OW + ow) * C + c] = (float)cnt_or_idx[c];
      }
    }
  });
}
void global_avg_pool(KernelContext& ctx, Graph& g, Node& n) {
  Value &a = in(g, n, 0), &o = out(g, n);
  if (a.shape.size() != 4) fail(n, "expects a 4-D NHWC input");
  int64_t N = a.shape[0], HW = a.shape[1] * a.shape[2], C = a.shape[3];
  if (o.dims.size() == 4) ensure_shape(o, {N, 1, 1, C});
  else ensure_shape(o, {N, C});
  constexpr int64_t CB = 256;  // channels a block: double accumulators on the stack
  const int64_t cblocks = (C + CB - 1) / CB;
  if (HW == 0) {  // the mean of nothing (0 / 0), as before; the input may have no storage
    for (int64_t i = 0; i < N * C; i++) o.data[i] = std::nanf("");
    return;
  }
  parallel(ctx, N * cblocks, std::max<int64_t>(1, (int64_t(1) << 13) / (HW * CB)), [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; t++) {
      int64_t b = t / cblocks, c0 = (t % cblocks) * CB, cn = std::min(CB, C - c0);
      double acc[CB];
      column_sums_f64(a.data.data() + b * HW * C + c0, HW, C, cn, acc);
      for (int64_t c = 0; c < cn; c++) o.data[b * C + c0 + c] = (float)(acc[c] / (double)HW);
    }
  });
}

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
  const Value* res = n.qpacked.N > 0 ? nullptr : fused_residual(g, n, s);
  if (n.qpacked.N > 0 && n.residual != kInvalidId) n.residual_pending = true;
  Value& o = gemm_output(g, n, s);
  int64_t M = a.numel() / IC;
  const float* bias = bias_of(g, n, OC);
  GemmEpilogue ep = epilogue(n, bias);
  with_residual(ep, n, res, 0, OC);
  if (n.qpacked.N > 0) {
    // the filter lives only as int8 panels: the input must carry its per-row quantization
    if (n.qpacked.K != IC || n.qpacked.N != OC || a.row_len <= 0 || a.row_len % IC != 0 ||
        (int64_t)a.row_scale.size() * a.row_len < a.numel() || (int64_t)a.q8.size() < a.numel())
      fail(n, "dynamically quantized input without per-row quantization parameters (corrupt program?)");
    // int8 x int8 on the integers finalize_value kept, rows padded to the packed K
    const int64_t Kp = n.qpacked.Kp, per_row = a.row_len / IC;
    sc.q8.resize((size_t)(M * Kp));
    sc.row_scale.resize((size_t)M);
    sc.row_zp.resize((size_t)M);
    parallel(ctx, M, std::max<int64_t>(1, 4096 / std::max<int64_t>(IC, 1)), [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; m++) {
        const double scale = a.row_scale[(size_t)(m / per_row)];
        const int32_t zp = a.row_zp[(size_t)(m / per_row)];
        uint8_t* q = sc.q8.data() + m * Kp;
        std::memcpy(q, a.q8.data() + m * IC, (size_t)IC);
        std::memset(q + IC, 0, (size_t)(Kp - IC));
        sc.row_scale[(size_t)m] = (float)scale;
        sc.row_zp[(size_t)m] = zp;
      }
    });
    QActivations qa{sc.q8.data(), sc.row_scale.data(), sc.row_zp.data()};
    qgemm_q8(ctx.pool, M, qa, n.qpacked, bias, n.out_min, n.out_max, o.data.data(), OC);
    return;
  }
  if (!n.packed.empty()) {
    if (n.packed[0].K != IC || n.packed[0].N != OC) fail(n, "packed weights do not match the filter");
    sgemm_packed(ctx.pool, M, a.data.data(), IC, 1, n.packed[0], o.data.data(), OC, ep);
  } else {
    sgemm(ctx.pool, M, OC, IC, a.data.data(), IC, 1, w.data.data(), tw ? OC : 1, tw ? 1 : IC, o.data.data(), OC, ep);
  }
}

// Convolution as an indirect GEMM (AVX-512): every output pixel's taps are read in place from
// the input, zero-padded once into a scratch copy when the node pads (or reads an NCHW input,
// transposed on the way into the copy); no im2col rows. False, before any work, when the CPU
// path has no indirect kernel or the offsets would not fit in int32.
bool conv_indirect(KernelContext& ctx, const Node& n, const Value& a, bool nchw, int64_t gi, int64_t N, int64_t H,
                   int64_t W, int64_t C, int64_t ICg, int64_t OH, int64_t OW, int64_t K, int64_t M,
                   const GemmEpilogue& ep, float* Cp, int64_t OC, Scratch& sc) {
  static const bool avx512 = cpu_has_avx512f();
  if (!avx512) return false;
  const int64_t pt = n.pad_top, pb = n.pad_bottom, pl = n.pad_left, pr = n.pad_right;
  const int64_t Hp = H + pt + pb, Wp = W + pl + pr, KW = n.kw;
  if ((int64_t)n.kh * n.dh * Wp * C + (KW * n.dw + 1) * C > INT32_MAX) return false;
  const float* base = a.cdata();
  if (nchw || pt || pb || pl || pr) {
    if (gi == 0) {  // one padded copy serves every group
      sc.padded.resize((size_t)(N * Hp * Wp * C));
      float* P = sc.padded.data();
      const float* X = a.cdata();
      parallel(ctx, N * Hp, 8, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; r++) {
          int64_t bn = r / Hp, h = r % Hp - pt;
          float* dst = P + r * Wp * C;
          if (h < 0 || h >= H) {
            std::memset(dst, 0, (size_t)(Wp * C) * 4);
            continue;
          }
          std::memset(dst, 0, (size_t)(pl * C) * 4);
          if (nchw) {  // row h of every channel plane, interleaved
            float* d = dst + pl * C;
            for (int64_t c = 0; c < C; c++) {
              const float* src = X + ((bn * C + c) * H + h) * W;
              for (int64_t x = 0; x < W; x++) d[x * C + c] = src[x];
            }
          } else {
            std::memcpy(dst + pl * C, X + (bn * H + h) * W * C, (size_t)(W * C) * 4);
          }
          std::memset(dst + (pl + W) * C, 0, (size_t)(pr * C) * 4);
        }
      });
    }
    base = sc.padded.data();
  }
  if (gi == 0) {  // tap offsets are the same for every group
    sc.conv_koff.resize((size_t)K);
    for (int64_t i = 0, k = 0; i < (int64_t)n.kh; i++)
      for (int64_t j = 0; j < KW; j++)
        for (int64_t c = 0; c < ICg; c++, k++) sc.conv_koff[(size_t)k] = (int32_t)((i * n.dh * Wp + j * n.dw) * C + c);
  }
  sc.conv_rows.resize((size_t)M);
  parallel(ctx, M, 4096, [&](int64_t b, int64_t e) {
    for (int64_t m = b, bn = b / (OH * OW), oh = (b / OW) % OH, ow = b % OW; m < e; m++) {
      sc.conv_rows[(size_t)m] = base + ((bn * Hp + oh * n.sh) * Wp + ow * n.sw) * C + gi * ICg;
      if (++ow == OW) {
        ow = 0;
        if (++oh == OH) { oh = 0; bn++; }
      }
    }
  });
  return sgemm_packed_indirect(ctx.pool, M, sc.conv_rows.data(), sc.conv_koff.data(), n.packed[gi], Cp, OC, ep);
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
    thread_local FloatBuffer col;  // grows only
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

void conv2d(KernelContext& ctx, Graph& g, Node& n, Scratch& sc) {
  const Value* ap = &in(g, n, 0);  // NHWC, or NCHW when a transpose was fused in (until it runs)
  Value& w = in(g, n, 1);
  bool nchw = n.nchw_transposed != kInvalidId;
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
  check_filter(n, w, {OC, (int64_t)n.kh, (int64_t)n.kw, ICg});
  if (M * K > (int64_t(1) << 32)) fail(n, "im2col buffer would be too large");
  const float* bias = bias_of(g, n, OC);
  bool pointwise = n.kh == 1 && n.kw == 1 && n.sh == 1 && n.sw == 1 && !n.pad_top && !n.pad_left && !n.pad_bottom && !n.pad_right;
  if (!n.packed.empty()) {
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
  // im2col of output pixels [m_begin, m_end) of group gi into rows of K floats at dst. With one
  // group and no dilation, a kernel row's taps are KW * C adjacent input floats.
  const bool row_runs = G == 1 && n.dw == 1;
  const int64_t KW = n.kw, run = KW * ICg;
  auto copy = [](float* d, const float* src, int64_t len) {  // short runs: no memcpy call
    if (len >= 32) std::memcpy(d, src, (size_t)len * 4);
    else for (int64_t t = 0; t < len; t++) d[t] = src[t];
  };
  auto im2col = [&](int64_t gi, int64_t m_begin, int64_t m_end, float* dst_rows) {
    const float* X = ap->cdata();
    int64_t bn = m_begin / (OH * OW), oh = (m_begin / OW) % OH, ow = m_begin % OW;  // then stepped, no divisions
    for (int64_t m = m_begin; m < m_end; m++, ow++) {
      if (ow == OW) {
        ow = 0;
        if (++oh == OH) { oh = 0; bn++; }
      }
      float* row = dst_rows + (m - m_begin) * K;
      int64_t iw0 = ow * n.sw - n.pad_left;
      for (int64_t i = 0; i < (int64_t)n.kh; i++) {
        int64_t ih = oh * n.sh - n.pad_top + i * n.dh;
        float* dst = row + i * run;
        if (ih < 0 || ih >= H) {
          std::memset(dst, 0, (size_t)run * 4);
          continue;
        }
        const float* src_row = X + ((bn * H + ih) * W) * C + gi * ICg;
        if (row_runs && iw0 >= 0 && iw0 + KW <= W) {
          copy(dst, src_row + iw0 * C, run);
          continue;
        }
        for (int64_t j = 0; j < KW; j++, dst += ICg) {
          int64_t iw = iw0 + j * n.dw;
          if (iw < 0 || iw >= W) std::memset(dst, 0, (size_t)ICg * 4);
          else copy(dst, src_row + iw * C, ICg);
        }
      }
    }
  };
  for (int64_t gi = 0; gi < G; gi++) {
    GemmEpilogue ep = epilogue(n, bias ? bias + gi * OCg : nullptr);
    with_residual(ep, n, res, gi * OCg, OC);
    float* Cp = o.data.data() + gi * OCg;
    if (nchw && fusion_mode() == FusionMode::Steps) transpose_input();
    if (nchw && !pointwise && conv_nchw_direct(ctx, n, *ap, N, H, W, C, OH, OW, K, ep, Cp, OC, sc)) continue;
    if (!n.packed.empty() && !pointwise &&
        conv_indirect(ctx, n, *ap, nchw, gi, N, H, W, C, ICg, OH, OW, K, M, ep, Cp, OC, sc))
      continue;
    if (nchw) transpose_input();  // (first group: conv_indirect fails before any work or never)
    if (pointwise) {
      const float* A = ap->cdata() + gi * ICg;
      if (!n.packed.empty()) sgemm_packed(ctx.pool, M, A, C, 1, n.packed[gi], Cp, OC, ep);
      else sgemm(ctx.pool, M, OCg, K, A, C, 1, w.data.data() + gi * OCg * K, 1, K, Cp, OC, ep);
      continue;
    }
    if (!n.packed.empty()) {
      // Blocks of output pixels, each unfolded into a small per-thread buffer (kept in cache)
      // and multiplied right away: no full-size im2col pass through memory.
      const int64_t rows = std::max<int64_t>(8, std::min<int64_t>(256, (int64_t(1) << 14) / K)) / 8 * 8;
      const PackedB& pb = n.packed[gi];
      parallel(ctx, (M + rows - 1) / rows, 1, [&](int64_t b, int64_t e) {
        thread_local FloatBuffer buf;  // grows only
        if (buf.size() < (size_t)(rows * K)) buf.resize((size_t)(rows * K));
        for (int64_t blk = b; blk < e; blk++) {
          int64_t m0 = blk * rows, m1 = std::min(M, m0 + rows);
          im2col(gi, m0, m1, buf.data());
          GemmEpilogue epb = ep;
          if (epb.residual) epb.residual += m0 * OC;
          sgemm_packed(nullptr, m1 - m0, buf.data(), K, 1, pb, Cp + m0 * OC, OC, epb);
        }
      });
      continue;
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
void depthwise(KernelContext& ctx, Graph& g, Node& n, Value& o) {
  Value &a = in(g, n, 0), &w = in(g, n, 1);
  if (a.shape.size() != 4 || w.shape.size() != 4) fail(n, "expects 4-D NHWC input and filter");
  int64_t N = a.shape[0], H = a.shape[1], W = a.shape[2], C = a.shape[3], OC = w.shape[3];
  if (OC % C) fail(n, "filter channels are not a multiple of input channels");
  int64_t mult = OC / C, KH = n.kh, KW = n.kw;
  int64_t OH = pool_dim(n, H, KH, n.sh, n.dh, n.pad_top, n.pad_bottom), OW = pool_dim(n, W, KW, n.sw, n.dw, n.pad_left, n.pad_right);
  ensure_shape(o, {N, OH, OW, OC});
  check_filter(n, w, {1, KH, KW, OC});
  const float* bias = bias_of(g, n, OC);
  const float* wd = w.data.data();
  float lo = n.out_min, hi = n.out_max;
  if (mult == 1) {
    DepthwiseGeom dg{N, H, W, C, OH, OW, KH, KW, n.sh, n.sw, n.dh, n.dw, n.pad_top, n.pad_left, lo, hi};
    const float* x = a.data.data();
    float* y = o.data.data();
    parallel(ctx, N * OH, 1, [&](int64_t b, int64_t e) { depthwise_nhwc_f32(dg, x, wd, bias, y, b, e); });
    return;
  }
  parallel(ctx, N * OH, 1, [&](int64_t b, int64_t e) {
    std::vector<float> acc((size_t)OC);
    for (int64_t r = b; r < e; r++) {
      int64_t bn = r / OH, oh = r % OH;
      for (int64_t ow = 0; ow < OW; ow++) {
        if (bias) copy_floats(acc.data(), bias, OC);
        else std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t i = 0; i < KH; i++) {
          int64_t ih = oh * n.sh - n.pad_top + i * n.dh;
          if (ih < 0 || ih >= H) continue;
          for (int64_t j = 0; j < KW; j++) {
            int64_t iw = ow * n.sw - n.pad_left + j * n.dw;
            if (iw < 0 || iw >= W) continue;
            const float* x = &a.data[((bn * H + ih) * W + iw) * C];
            const float* k = wd + (i * KW + j) * OC;
            float* ac = acc.data();
            if (mult == 1) {
              for (int64_t c = 0; c < OC; c++) ac[c] += x[c] * k[c];
            } else {
              for (int64_t c = 0; c < OC; c++) ac[c] += x[c / mult] * k[c];
            }
          }
        }
        float* y = &o.data[((bn * OH + oh) * OW + ow) * OC];
        for (int64_t c = 0; c < OC; c++) y[c] = std::min(std::max(acc[c], lo), hi);
      }
    }
  });
}

void deconv(Graph& g, Node& n) {
  Value &a = in(g, n, 0), &w = in(g, n, 1), &o = out(g, n);
  if (a.shape.size() != 4 || w.shape.size() != 4) fail(n, "expects 4-D NHWC input and filter");
  int64_t N = a.shape[0], H = a.shape[1], W = a.shape[2], C = a.shape[3];
  int64_t G = n.groups, ICg = n.group_in, OCg = n.group_out, OC = G * OCg, KH = n.kh, KW = n.kw;
  if (C != G * ICg) fail(n, "input channels do not match the filter");
  int64_t OH = (H - 1) * n.sh + n.dh * (KH - 1) + 1 - n.pad_top - n.pad_bottom + n.adj_h;
  int64_t OW = (W - 1) * n.sw + n.dw * (KW - 1) + 1 - n.pad_left - n.pad_right + n.adj_w;
  if (OH <= 0 || OW <= 0) fail(n, "output would be empty");
  ensure_shape(o, {N, OH, OW, OC});
  check_filter(n, w, {OC, KH, KW, ICg});
  const float* bias = bias_of(g, n, OC);
  for (int64_t p = 0; p < N * OH * OW; p++)
    for (int64_t c = 0; c < OC; c++) o.data[p * OC + c] = bias ? bias[c] : 0.f;
  const float* wd = w.data.data();
  for (int64_t bn = 0; bn < N; bn++)
    for (int64_t ih = 0; ih < H; ih++)
      for (int64_t iw = 0; iw < W; iw++) {
        const float* x = &a.data[((bn * H + ih) * W + iw) * C];
        for (int64_t i = 0; i < KH; i++) {
          int64_t oh = ih * n.sh - n.pad_top + i * n.dh;
          if (oh < 0 || oh >= OH) continue;
          for (int64_t j = 0; j < KW; j++) {
            int64_t ow = iw * n.sw - n.pad_left + j * n.dw;
            if (ow < 0 || ow >= OW) continue;
            float* y = &o.data[((bn * OH + oh) * OW + ow) * OC];
            for (int64_t gi = 0; gi < G; gi++)
              for (int64_t oc = 0; oc < OCg; oc++) {
                const float* k = wd + (((gi * OCg + oc) * KH + i) * KW + j) * ICg;
                const float* xg = x + gi * ICg;
                float s = 0;
                for (int64_t ic = 0; ic < ICg; ic++) s += xg[ic] * k[ic];
                y[gi * OCg + oc] += s;
              }
          }
        }
      }
  clamp_output(n, o);
}

void batch_matmul(KernelContext& ctx, Graph& g, Node& n) {
  Value &a = in(g, n, 0), &b = in(g, n, 1), &o = out(g, n);
  if (a.shape.size() < 2 || b.shape.size() < 2) fail(n, "inputs must be at least 2-D");
  bool tb = n.flags & kTransposeWeights;
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t M = a.shape[ra - 2], K = a.shape[ra - 1];
  int64_t Kb = tb ? b.shape[rb - 1] : b.shape[rb - 2], N = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  if (K != Kb) fail(n, "inner dimensions differ: " + shape_str(a.shape) + " x " + shape_str(b.shape));
  int64_t BA = a.numel() / (M * K), BB = b.numel() / (Kb * N);
  if (BA != BB && BB != 1 && BA != 1) fail(n, "batch dimensions do not broadcast");
  int64_t B = std::max(BA, BB);
  std::vector<int64_t> s = BA >= BB ? a.shape : b.shape;
  s[s.size() - 2] = M;
  s[s.size() - 1] = N;
  ensure_shape(o, s);
  for (int64_t i = 0; i < B; i++) {
    const float* A = a.data.data() + (BA == 1 ? 0 : i) * M * K;
    const float* Bp = b.data.data() + (BB == 1 ? 0 : i) * K * N;
    sgemm(ctx.pool, M, N, K, A, K, 1, Bp, tb ? 1 : N, tb ? K : 1, o.data.data() + i * M * N, N, epilogue(n, nullptr));
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

}  // namespace

void ensure_shape(Value& v, const std::vector<int64_t>& shape) {
  constexpr int64_t kMaxElems = int64_t(1) << 32;  // 16 GiB of float32
  int64_t total = 1;
  for (auto d : shape)
    if (d < 0 || __builtin_mul_overflow(total, d, &total) || total > kMaxElems)
      throw_exec("XNNPACK value of shape " + shape_str(shape) + " is too large (corrupt program?)");
  v.shape = shape;
  size_t n = (size_t)total;
  if (v.data.size() < n) v.data.resize(n);
}

void finalize_value(Value& v) {
  int64_t n = v.numel();
  float* d = v.data.data();
  if (v.dtype == FP16) {
    for (int64_t i = 0; i < n; i++) d[i] = half_to_float(float_to_half(d[i]));
  } else if (v.dtype == BF16) {
    for (int64_t i = 0; i < n; i++) d[i] = bf16_to_float(float_to_bf16(d[i]));
  } else if (v.quant == Quant::PerTensor && (v.dtype == QINT8 || v.dtype == QUINT8)) {
    // q = clamp(round(x / scale) + zp) and back, as clamp(x / scale, qmin - zp, qmax - zp) rounded
    // to nearest even by adding and subtracting 1.5 * 2^23 (exact for |t| < 2^22): a loop the
    // compiler vectorises (NaN stays NaN, as before)
    const float zp = (float)v.zero_point, lo = (v.dtype == QINT8 ? -128.f : 0.f) - zp,
                hi = (v.dtype == QINT8 ? 127.f : 255.f) - zp, inv = 1.f / v.scale, scale = v.scale;
    const float magic = 12582912.f;
    for (int64_t i = 0; i < n; i++) {
      float t = d[i] * inv;
      t = t < lo ? lo : t;
      t = t > hi ? hi : t;
      t = (t + magic) - magic;
      d[i] = t * scale;
    }
  } else if (v.quant == Quant::PerToken || v.dtype == QDINT8) {
    // Dynamic asymmetric int8 per token (rows of the trailing `nonbatch_dims` dims).
    int nb = std::max(1, std::min<int>(v.nonbatch_dims, (int)v.shape.size()));
    int64_t len = 1;
    for (size_t k = v.shape.size() - nb; k < v.shape.size(); k++) len *= v.shape[k];
    int64_t rows = len > 0 ? (n + len - 1) / len : 0;
    v.row_len = len;
    v.row_scale.assign((size_t)rows, 1.0);  // an all-zero row: q = 0, zero point 0
    v.row_zp.assign((size_t)rows, 0);
    v.q8.resize((size_t)n);
    for (int64_t r = 0; r * len < n; r++) {
      float* x = d + r * len;
      float mn = 0.f, mx = 0.f;
      row_min_max(x, len, mn, mx);
      if (mx == mn) {  // all zeros: q = 0
        std::memset(v.q8.data() + r * len, 128, (size_t)len);
        continue;
      }
      double scale = ((double)mx - mn) / 255.0;
      double zp = std::nearbyint(std::min(std::max(-128.0 - mn / scale, -128.0), 127.0));
      v.row_scale[(size_t)r] = scale;
      v.row_zp[(size_t)r] = (int32_t)clamp_q(zp, -128.0, 127.0);
      quantize_row_q8(x, len, scale, zp, x, v.q8.data() + r * len);
    }
  }
}

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
  if (n.type == FullyConnected) {
    if (w->dims.size() != 2) fail(n, "filter must be 2-D");
    bool tw = n.flags & kTransposeWeights;
    int64_t IC = tw ? w->dims[0] : w->dims[1], OC = tw ? w->dims[1] : w->dims[0];
    const Value* x = n.inputs.empty() || n.inputs[0] >= g.values.size() ? nullptr : &g.values[n.inputs[0]];
    if (x && x->dtype == QDINT8 && w->dtype == QCINT8 && w->quant == Quant::PerChannel && w->zero_point == 0 &&
        w->channel_dim == (tw ? 1 : 0) && (int64_t)w->scales.size() >= OC && IC > 0 && OC > 0 &&
        IC <= 32768) {  // int32 sums of up to 32768 products of 255 * 128 (and the zero-point term) cannot overflow
      // qd8 x qc8w: the filter's int8 values are its grid points divided by the channel scale
      std::vector<int8_t> q((size_t)(IC * OC));
      const float* f = w->cdata();
      for (int64_t i = 0; i < IC * OC; i++) {
        int64_t c = tw ? i % OC : i / IC;
        float s = w->scales[(size_t)c];
        double v = s != 0.f ? std::nearbyint((double)f[i] / s) : 0.0;
        q[(size_t)i] = (int8_t)clamp_q(v, -128.0, 127.0);
      }
      n.qpacked = pack_q8(IC, OC, q.data(), tw ? OC : 1, tw ? 1 : IC, w->scales.data());
      return;
    }
    n.packed.push_back(pack_b(pool, IC, OC, w->cdata(), tw ? OC : 1, tw ? 1 : IC));
  } else if (n.type == Conv2d) {
    if (w->dims.size() != 4) fail(n, "filter must be 4-D");
    int64_t K = (int64_t)n.kh * n.kw * n.group_in, OCg = n.group_out;
    if (w->dims[0] != (int64_t)n.groups * OCg || w->dims[1] * w->dims[2] * w->dims[3] != K) fail(n, "filter shape mismatch");
    for (uint32_t gi = 0; gi < n.groups; gi++) n.packed.push_back(pack_b(pool, K, OCg, w->cdata() + gi * OCg * K, 1, K));
  }
}

void run_node(KernelContext& ctx, Graph& g, Node& n, Scratch& s) {
  switch (n.type) {
    case Add: binary(ctx, g, n, add_f, AddF()); break;
    case Subtract: binary(ctx, g, n, sub_f, SubF()); break;
    case Multiply: binary(ctx, g, n, mul_f, MulF()); break;
    case Div: binary(ctx, g, n, div_f, DivF()); break;
    case Minimum: binary(ctx, g, n, min_f, MinF()); break;
    case Maximum: binary(ctx, g, n, max_f, MaxF()); break;
    case PReLU: binary(ctx, g, n, prelu_f, PreluF()); break;
    case Clamp: case Copy: case Convert: copy_value(g, n); break;
    case Sigmoid: unary_vec(ctx, g, n, vec_sigmoid); break;
    case Tanh: unary_vec(ctx, g, n, vec_tanh); break;
    case Floor: unary(ctx, g, n, [](double x) { return std::floor(x); }); break;
    case Ceiling: unary(ctx, g, n, [](double x) { return std::ceil(x); }); break;
    case SquareRoot: unary(ctx, g, n, [](double x) { return std::sqrt(x); }); break;
    case ReciprocalSquareRoot: unary(ctx, g, n, [](double x) { return 1.0 / std::sqrt(x); }); break;
    case Square: unary(ctx, g, n, [](double x) { return x * x; }); break;
    case Abs: unary(ctx, g, n, [](double x) { return std::fabs(x); }); break;
    case Negate: unary(ctx, g, n, [](double x) { return -x; }); break;
    case Exp: unary_vec(ctx, g, n, vec_exp); break;
    case Log: unary(ctx, g, n, [](double x) { return std::log(x); }); break;
    case Sin: unary(ctx, g, n, [](double x) { return std::sin(x); }); break;
    case Cos: unary(ctx, g, n, [](double x) { return std::cos(x); }); break;
    case Gelu: unary_vec(ctx, g, n, vec_gelu); break;
    case Hardswish: unary(ctx, g, n, [](double x) { return x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0; }); break;
    case LeakyReLU: { double sl = n.fparam; unary(ctx, g, n, [sl](double x) { return x > 0 ? x : x * sl; }); break; }
    case ELU: { double al = n.fparam; unary(ctx, g, n, [al](double x) { return x > 0 ? x : al * std::expm1(x); }); break; }
    case Softmax: softmax(ctx, g, n); break;
    case StaticTranspose: transpose(ctx, g, n); break;
    case StaticReshape: reshape(g, n); break;
    case StaticSlice: slice(g, n); break;
    case StaticConstantPad: pad(g, n); break;
    case Concatenate2: case Concatenate3: case Concatenate4: case Concatenate5: concat(g, n); break;
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
        depthwise(ctx, g, n, d);
        finalize_value(d);
        run_node(ctx, g, *n.post, s);
      } else {
        depthwise(ctx, g, n, out(g, n));
      }
      break;
    case ConvTranspose2d: deconv(g, n); break;
    case BatchMatrixMultiply: batch_matmul(ctx, g, n); break;
    case ScaledDotProductAttention: sdpa(g, n); break;
    default: fail(n, "node type is not implemented");
  }
  if (n.residual_pending) {  // a fused residual add whose shapes differed: the add itself
    Value &x = g.values[n.unfused], &r = g.values[n.residual], &o = out(g, n);
    binary_values(ctx, x, r, o, add_f, AddF());
    clamp_values(o, n.res_min, n.res_max);
    n.residual_pending = false;
  }
  Value& o = out(g, n);
  if (n.type != FullyConnected && n.type != Conv2d && n.type != DepthwiseConv2d && n.type != ConvTranspose2d &&
      n.type != BatchMatrixMultiply)
    clamp_output(n, o);  // the GEMM-based nodes clamp in their epilogue
  finalize_value(o);
  if (n.type == ArgMaxPooling2d) finalize_value(g.values[n.output2]);
}

}  // namespace etnp::xnn
