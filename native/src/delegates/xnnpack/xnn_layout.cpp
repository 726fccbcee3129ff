// Layout XNNPACK nodes: transpose (cache-blocked), reshape, slice, constant pad, concatenation,
// bilinear resize.
#include "delegates/xnnpack/xnn_node_util.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/compute/transpose_f32.h"
#include "kernels/compute/transpose_u8.h"
#include "kernels/kernel_util.h"
#include "os/thread_slot.h"
#include "util/compiler.h"
#include "util/copy_short.h"

namespace etnp::xnn {

// ---- layout ----
// Nodes whose output size comes from the node's own parameters (padding, resize target): the
// output must fit the graph value's serialized shape (its upper bounds for dynamic shapes), as
// the exporter wrote it; more is a corrupt program (not a gigabyte allocation).
static void check_fits_value(const Node& n, const Value& o, const std::vector<int64_t>& shape) {
  if (o.dims.size() != shape.size()) return;  // (no serialized shape to hold it to)
  int64_t want = 1, have = 1;
  for (size_t d = 0; d < shape.size(); d++) {
    if (o.dims[d] < 0) return;
    if (etnp::mul_overflow(want, shape[d], &want)) want = INT64_MAX;
    if (etnp::mul_overflow(have, o.dims[d], &have)) have = INT64_MAX;
  }
  if (want > have)
    fail(n, "output shape " + shape_str(shape) + " exceeds the graph value's " + shape_str(o.dims) + " (corrupt program?)");
}

// Permutations that, once runs of adjacent dims are merged, swap the last two of [B, R, S]
// (NCHW <-> NHWC is one): out[b][s][r] = in[b][r][s]. The merged shape: 1 with B, R, S set; 0 for
// the same element order; -1 for other permutations.
static int batched_2d_dims(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm, int64_t& B, int64_t& R,
                           int64_t& S) {
  // merged runs of input dims (size-1 dims dropped), in output order: size, first and last input dim
  int64_t md[8], mf[8], ml[8];
  size_t nm = 0;
  for (size_t i = 0; i < perm.size(); i++) {
    int64_t d = perm[i], size = shape[d];
    if (size == 1) continue;
    if (nm && d > ml[nm - 1]) {
      bool adjacent = true;  // every dim between the run's last and d must be 1
      for (int64_t k = ml[nm - 1] + 1; k < d; k++) adjacent = adjacent && shape[k] == 1;
      if (adjacent) { md[nm - 1] *= size; ml[nm - 1] = d; continue; }
    }
    md[nm] = size;
    mf[nm] = ml[nm] = d;
    nm++;
  }
  if (nm <= 1) return 0;
  B = 1;
  if (nm == 2 && mf[0] > mf[1]) { R = md[1]; S = md[0]; }
  else if (nm == 3 && mf[0] < mf[1] && mf[0] < mf[2] && mf[1] > mf[2]) { B = md[0]; R = md[2]; S = md[1]; }
  else return -1;
  return 1;
}

// The batched 2-D transpose of B matrices R x S (float32 values or byte codes), copied in
// cache-sized blocks. Tasks: (batch, block of T output rows s, block of output columns r) - the
// columns split too when the rows are few (NHWC -> NCHW of a few channels); a task a thread above
// 64 Ki elements.
template <typename E, typename Kernel>
static void batched_2d(KernelContext& ctx, const E* x, int64_t B, int64_t R, int64_t S, E* y, Kernel kernel) {
  constexpr int64_t T = 32;
  const int64_t sblocks = (S + T - 1) / T, RB = S >= 2 * T ? R : std::max<int64_t>(64, (int64_t(1) << 14) / S);
  const int64_t rblocks = (R + RB - 1) / RB, per = sblocks * rblocks;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / (std::min(R, RB) * std::min(S, T)));
  parallel(ctx, B * per, grain, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; t++) {
      const int64_t b = t / per, sb = t % per / rblocks, rb = t % rblocks;
      const int64_t s0 = sb * T, s1 = std::min(S, s0 + T), r0 = rb * RB, r1 = std::min(R, r0 + RB);
      kernel(x + b * R * S, R, S, y + b * R * S, s0, s1, r0, r1);
    }
  });
}

bool transpose_as_batched_2d(KernelContext& ctx, const Value& a, const std::vector<int64_t>& perm, Value& o) {
  int64_t B, R, S;
  const int kind = batched_2d_dims(a.shape, perm, B, R, S);
  if (kind == 0) {  // the same element order
    copy_values(ctx, o.data.data(), a.cdata(), o.numel());
    return true;
  }
  if (kind < 0) return false;
  if (a.numel() == 0) return true;  // nothing to move (a size-0 dim: no division by it)
  // (x: the caller's tensor when the delegate input is read in place)
  batched_2d(ctx, a.cdata(), B, R, S, o.data.data(), transpose_2d_f32);
  return true;
}

// dst (dense, shape s) = src[base + sum_d idx[d] * st[d]]: the general transpose and slice, of
// float32 values or byte codes. Dims of size 1 are dropped and dims that stay adjacent in the
// source merged; then each row of the innermost dim is one run (a block copy when its source is
// contiguous, a strided gather otherwise) and rows are split across threads when there are many
// elements.
template <typename E>
static void strided_copy(KernelContext& ctx, const E* src, int64_t base, const std::vector<int64_t>& shape,
                         const std::vector<int64_t>& strides, E* dst) {
  int64_t s[8], st[8];
  int nd = 0;
  for (size_t d = 0; d < shape.size(); d++) {
    if (shape[d] == 1) continue;
    if (shape[d] == 0) return;
    if (nd > 0 && st[nd - 1] == strides[d] * shape[d]) {  // merges with the previous dim
      s[nd - 1] *= shape[d];
      st[nd - 1] = strides[d];
      continue;
    }
    s[nd] = shape[d];
    st[nd] = strides[d];
    nd++;
  }
  if (nd == 0) {
    dst[0] = src[base];
    return;
  }
  const int64_t inner = s[nd - 1], ist = st[nd - 1];
  int64_t rows = 1;
  for (int d = 0; d < nd - 1; d++) rows *= s[d];
  parallel(ctx, rows, std::max<int64_t>(1, (1 << 15) / inner), [&](int64_t r0, int64_t r1) {
    int64_t idx[8] = {}, rem = r0, off = base;
    for (int d = nd - 2; d >= 0; d--) {
      idx[d] = rem % s[d];
      rem /= s[d];
      off += idx[d] * st[d];
    }
    for (int64_t r = r0; r < r1; r++) {
      E* out = dst + r * inner;
      const E* in = src + off;
      if (ist != 1) for (int64_t j = 0; j < inner; j++) out[j] = in[j * ist];
      else if (sizeof(E) == sizeof(float)) copy_floats((float*)out, (const float*)in, inner);
      else std::memcpy(out, in, (size_t)inner * sizeof(E));
      for (int d = nd - 2; d >= 0; d--) {  // next row
        off += st[d];
        if (++idx[d] < s[d]) break;
        off -= idx[d] * st[d];
        idx[d] = 0;
      }
    }
  });
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
  const std::vector<int64_t> strides(st, st + nd);
  if (a.as_codes || o.as_codes) {  // int8 values kept as codes (int8_moves): bytes moved, not floats
    if (!int8_moves(g, n)) fail(n, "int8 codes on a transpose that cannot take them");  // (the plan rules it out)
    ETNP_THREAD_LOCAL(std::vector<uint8_t>, in_buf);
    ETNP_THREAD_LOCAL(std::vector<uint8_t>, out_buf);
    int32_t zp;
    const uint8_t* x = value_codes(ctx, n, a, a.numel(), in_buf, zp);
    uint8_t* y = output_codes(o, out_buf);
    int64_t B, R, S;
    const int kind = batched_2d_dims(a.shape, n.ints, B, R, S);
    if (kind == 0 && y != x) std::memcpy(y, x, (size_t)o.numel());
    else if (kind > 0 && o.numel() > 0) batched_2d(ctx, x, B, R, S, y, transpose_2d_u8);
    else if (kind < 0) strided_copy(ctx, x, 0, s, strides, y);
    if (!o.as_codes) codes_to_values(ctx, o, y);
    n.snapped = true;
    return;
  }
  if (transpose_as_batched_2d(ctx, a, n.ints, o)) return;
  strided_copy(ctx, a.cdata(), 0, s, strides, o.data.data());
}
void reshape(KernelContext& ctx, Graph& g, Node& n, Scratch& sc) {
  Value &a = in(g, n, 0), &o = out(g, n);
  std::vector<int64_t> s = n.ints;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == 0) { if (infer >= 0) fail(n, "more than one inferred dimension"); infer = (int64_t)i; }
    else if (s[i] < 0 || etnp::mul_overflow(known, s[i], &known)) fail(n, "invalid reshape size");
  }
  if (infer >= 0) s[infer] = known ? a.numel() / known : 0;
  int64_t total = 1;
  for (auto d : s)
    if (etnp::mul_overflow(total, d, &total)) fail(n, "invalid reshape size");
  if (total != a.numel()) fail(n, "cannot reshape " + shape_str(a.shape) + " to " + shape_str(s));
  if (a.as_codes || o.as_codes) {  // int8 values kept as codes (int8_moves): their bytes copied
    if (!int8_moves(g, n)) fail(n, "int8 codes on a reshape that cannot take them");  // (the plan rules it out)
    ETNP_THREAD_LOCAL(std::vector<uint8_t>, in_buf);
    ETNP_THREAD_LOCAL(std::vector<uint8_t>, out_buf);
    int32_t zp;
    const uint8_t* x = value_codes(ctx, n, a, total, in_buf, zp);
    ensure_shape(o, s);
    uint8_t* y = output_codes(o, out_buf);
    if (y != x) std::memcpy(y, x, (size_t)total);
    if (!o.as_codes) codes_to_values(ctx, o, y);
    n.snapped = true;
    return;
  }
  if (n.view_input && &o != &a) {  // a graph input, read in place (its buffer is fixed for the call)
    o.shape = s;                   // (the size was checked above: the input's element count)
    o.raw = a.cdata();
    return;
  }
  if (n.move_input && &o != &a) {  // nothing else reads the input: its buffer becomes the output's
    o.data.swap(a.data);
    sc.moves.emplace_back(n.output, n.inputs[0]);
    ensure_shape(o, s);
    return;
  }
  ensure_shape(o, s);
  if (&o != &a) copy_values(ctx, o.data.data(), a.cdata(), total);
}
void slice(KernelContext& ctx, Graph& g, Node& n) {
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
  if (nd > 8) fail(n, "rank " + std::to_string(nd) + " is above 8");
  strided_copy(ctx, a.cdata(), base, s, st, o.data.data());
}
void pad(KernelContext& ctx, Graph& g, Node& n) {
  Value &a = in(g, n, 0), &o = out(g, n);
  const size_t nd = a.shape.size();
  if (n.ints.size() != nd || n.ints2.size() != nd) fail(n, "padding rank mismatch");
  if (nd == 0 || nd > 8) fail(n, "padding of a " + std::to_string(nd) + "-D value");
  std::vector<int64_t> s(nd), ist(nd);
  int64_t acc = 1;
  for (size_t i = nd; i-- > 0;) { ist[i] = acc; acc *= a.shape[i]; }
  for (size_t i = 0; i < nd; i++) {
    if (n.ints[i] < 0 || n.ints2[i] < 0) fail(n, "negative padding");
    s[i] = a.shape[i] + n.ints[i] + n.ints2[i];
  }
  check_fits_value(n, o, s);
  ensure_shape(o, s);
  // output rows along the last dim: all padding, or padding / an input row / padding
  const int64_t L = s[nd - 1], IL = a.shape[nd - 1], left = n.ints[nd - 1];
  if (L == 0 || o.numel() == 0) return;
  const int64_t rows = o.numel() / L;
  const float* X = a.cdata();
  float* Y = o.data.data();
  const float v = n.fparam;
  parallel(ctx, rows, std::max<int64_t>(1, (int64_t(1) << 14) / L), [&](int64_t r0, int64_t r1) {
    int64_t idx[8] = {};
    for (int64_t d = (int64_t)nd - 2, t = r0; d >= 0; d--) {
      idx[d] = t % s[d];
      t /= s[d];
    }
    for (int64_t r = r0; r < r1; r++) {
      float* y = Y + r * L;
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d + 1 < nd && inside; d++) {
        const int64_t j = idx[d] - n.ints[d];
        inside = j >= 0 && j < a.shape[d];
        off += j * ist[d];
      }
      if (inside) {
        std::fill(y, y + left, v);
        copy_floats(y + left, X + off, IL);
        std::fill(y + left + IL, y + L, v);
      } else {
        std::fill(y, y + L, v);
      }
      for (int64_t d = (int64_t)nd - 2; d >= 0; d--) {
        if (++idx[d] < s[d]) break;
        idx[d] = 0;
      }
    }
  });
}
namespace {
// n runs of `len` (<= 16) floats, dst rows `ystride` apart, src rows contiguous: the run's size
// a compile-time constant (a few channels of NHWC pixels: a copy call or a loop a run cost more
// than the copy)
template <int LEN>
void runs_fixed(float* y, int64_t ystride, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i++) copy_short((char*)(y + i * ystride), (const char*)(x + i * LEN), LEN * sizeof(float));
}
template <int... L>
void copy_runs_of(float* y, int64_t ystride, const float* x, int64_t len, int64_t n, std::integer_sequence<int, L...>) {
  using Fn = void (*)(float*, int64_t, const float*, int64_t);
  static constexpr Fn fns[] = {&runs_fixed<L + 1>...};
  fns[len - 1](y, ystride, x, n);
}
void copy_runs(float* y, int64_t ystride, const float* x, int64_t len, int64_t n) {
  if (len >= 1 && len <= 16) copy_runs_of(y, ystride, x, len, n, std::make_integer_sequence<int, 16>());
  else
    for (int64_t i = 0; i < n; i++) copy_floats(y + i * ystride, x + i * len, len);
}
}  // namespace

void concat(KernelContext& ctx, Graph& g, Node& n) {
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
  // each output row (of `outer`) holds one run of every input: rows across threads; short runs
  // (a few channels of NHWC pixels) copied by a plain loop rather than a call each
  const size_t ni = n.inputs.size();
  if (ni > 5) fail(n, "more than 5 inputs");
  int64_t run[5];
  bool codes = o.as_codes;
  for (size_t k = 0; k < ni; k++) {
    run[k] = g.values[n.inputs[k]].shape[n.axis] * inner;
    codes = codes || in(g, n, k).as_codes;
  }
  const int64_t row = s[n.axis] * inner;
  if (codes) {  // int8 values kept as codes (int8_moves): the inputs' codes (converted where an input is float32)
    if (!int8_moves(g, n)) fail(n, "int8 codes on a concatenation of different grids");  // (the plan rules it out)
    using Bufs = std::array<std::vector<uint8_t>, 6>;
    ETNP_THREAD_LOCAL(Bufs, bufs);
    const uint8_t* csrc[5];
    int32_t zp;
    for (size_t k = 0; k < ni; k++) csrc[k] = value_codes(ctx, n, in(g, n, k), outer * run[k], bufs[k], zp);
    uint8_t* Yc = output_codes(o, bufs[5]);
    parallel(ctx, outer, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, row)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; r++) {
        uint8_t* y = Yc + r * row;
        for (size_t k = 0; k < ni; k++) {
          copy_short((char*)y, (const char*)(csrc[k] + r * run[k]), (size_t)run[k]);
          y += run[k];
        }
      }
    });
    if (!o.as_codes) codes_to_values(ctx, o, Yc);
    n.snapped = true;
    return;
  }
  const float* src[5];
  for (size_t k = 0; k < ni; k++) src[k] = in(g, n, k).cdata();
  float* Y = o.data.data();
  parallel(ctx, outer, std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, row)), [&](int64_t b, int64_t e) {
    if (row <= 64) {  // runs of at most 16 floats: input by input, a fixed-size move a row
      for (size_t k = 0, off = 0; k < ni; off += (size_t)run[k], k++)
        copy_runs(Y + b * row + off, row, src[k] + b * run[k], run[k], e - b);
      return;
    }
    for (int64_t r = b; r < e; r++) {
      float* y = Y + r * row;
      for (size_t k = 0; k < ni; k++) {
        const float* x = src[k] + r * run[k];
        if (run[k] >= 64) copy_floats(y, x, run[k]);
        else copy_short((char*)y, (const char*)x, (size_t)run[k] * sizeof(float));
        y += run[k];
      }
    }
  });
}
void resize_bilinear(Graph& g, Node& n) {  // NHWC
  Value &a = in(g, n, 0), &o = out(g, n);
  if (a.shape.size() != 4) fail(n, "expects a 4-D NHWC input");
  int64_t N = a.shape[0], H = a.shape[1], W = a.shape[2], C = a.shape[3], OH = n.new_h, OW = n.new_w;
  check_fits_value(n, o, {N, OH, OW, C});
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

}  // namespace etnp::xnn
