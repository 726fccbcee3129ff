// convolution.out: 1-D, 2-D and 3-D, groups, stride, padding, dilation, transposed.
// Every convolution is handled as 3-D (leading spatial dims of size 1). float32 uses
// im2col (or the input directly for 1x1) + packed SGEMM, and a direct depthwise loop for 1-D/2-D;
// other dtypes use a reference loop in double.
#include <vector>

#include "kernels/compute/gemm.h"
#include "kernels/kernel_util.h"

namespace etnp {
namespace {

struct ConvGeom {
  int64_t N, C, O, groups;
  int64_t in[3], k[3], outs[3], s[3], p[3], d[3];  // depth, height, width
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return outs[0] * outs[1] * outs[2]; }
  int64_t k_plane() const { return k[0] * k[1] * k[2]; }
};

// Input coordinate of output position `o` and kernel tap `t` along spatial dim `i`.
inline int64_t src(const ConvGeom& g, int i, int64_t o, int64_t t) { return o * g.s[i] - g.p[i] + t * g.d[i]; }

void depthwise2d_f32(KernelContext& ctx, const ConvGeom& g, const float* in, const float* w, const float* bias, float* out) {
  const int64_t H = g.in[1], W = g.in[2], KH = g.k[1], KW = g.k[2], OH = g.outs[1], OW = g.outs[2];
  parallel(ctx, g.N * g.C, 1, [&](int64_t b, int64_t e) {
    for (int64_t nc = b; nc < e; nc++) {
      int64_t c = nc % g.C;
      const float* x = in + nc * H * W;
      const float* k = w + c * KH * KW;
      float* y = out + nc * OH * OW;
      float bv = bias ? bias[c] : 0.f;
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          float s = bv;
          for (int64_t kh = 0; kh < KH; kh++) {
            int64_t ih = src(g, 1, oh, kh);
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < KW; kw++) {
              int64_t iw = src(g, 2, ow, kw);
              if (iw >= 0 && iw < W) s += x[ih * W + iw] * k[kh * KW + kw];
            }
          }
          y[oh * OW + ow] = s;
        }
    }
  });
}

void conv_f32(KernelContext& ctx, const ConvGeom& g, const float* in, const float* w, const float* bias, float* out) {
  int64_t Cg = g.C / g.groups, Og = g.O / g.groups, KP = g.k_plane(), K = Cg * KP, P = g.out_plane();
  if (Cg == 1 && Og == 1 && g.in[0] == 1 && g.k[0] == 1) return depthwise2d_f32(ctx, g, in, w, bias, out);
  bool pointwise = true;
  for (int i = 0; i < 3; i++) pointwise = pointwise && g.k[i] == 1 && g.s[i] == 1 && g.p[i] == 0;
  std::vector<float> col(pointwise ? 0 : (size_t)(K * P));
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2], OD = g.outs[0], OH = g.outs[1], OW = g.outs[2];
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t gi = 0; gi < g.groups; gi++) {
      const float* x = in + (n * g.C + gi * Cg) * g.in_plane();
      const float* B = x;
      if (!pointwise) {
        parallel(ctx, K, 4, [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; k++) {
            int64_t c = k / KP, kd = (k / (g.k[1] * g.k[2])) % g.k[0], kh = (k / g.k[2]) % g.k[1], kw = k % g.k[2];
            float* dst = col.data() + k * P;
            for (int64_t od = 0; od < OD; od++) {
              int64_t id = src(g, 0, od, kd);
              for (int64_t oh = 0; oh < OH; oh++) {
                int64_t ih = src(g, 1, oh, kh);
                bool row = id >= 0 && id < ID && ih >= 0 && ih < IH;
                const float* xr = x + ((c * ID + (row ? id : 0)) * IH + (row ? ih : 0)) * IW;
                for (int64_t ow = 0; ow < OW; ow++) {
                  int64_t iw = src(g, 2, ow, kw);
                  *dst++ = (row && iw >= 0 && iw < IW) ? xr[iw] : 0.f;
                }
              }
            }
          }
        });
        B = col.data();
      }
      GemmEpilogue ep;
      ep.bias_row = bias ? bias + gi * Og : nullptr;
      sgemm(ctx.pool, Og, P, K, w + gi * Og * K, K, 1, B, P, 1, out + (n * g.O + gi * Og) * P, P, ep);
    }
}

void conv_ref(const ConvGeom& g, const Tensor& in, const Tensor& w, const Tensor* bias, Tensor& out) {
  int64_t Cg = g.C / g.groups, Og = g.O / g.groups;
  int64_t o_idx = 0;
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t o = 0; o < g.O; o++) {
      int64_t gi = o / Og;
      for (int64_t od = 0; od < g.outs[0]; od++)
        for (int64_t oh = 0; oh < g.outs[1]; oh++)
          for (int64_t ow = 0; ow < g.outs[2]; ow++) {
            double s = bias ? load_f64(bias->data, bias->dtype, o) : 0.0;
            for (int64_t c = 0; c < Cg; c++)
              for (int64_t kd = 0; kd < g.k[0]; kd++) {
                int64_t id = src(g, 0, od, kd);
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t kh = 0; kh < g.k[1]; kh++) {
                  int64_t ih = src(g, 1, oh, kh);
                  if (ih < 0 || ih >= g.in[1]) continue;
                  for (int64_t kw = 0; kw < g.k[2]; kw++) {
                    int64_t iw = src(g, 2, ow, kw);
                    if (iw < 0 || iw >= g.in[2]) continue;
                    s += load_f64(in.data, in.dtype, (((n * g.C + gi * Cg + c) * g.in[0] + id) * g.in[1] + ih) * g.in[2] + iw) *
                         load_f64(w.data, w.dtype, (((o * Cg + c) * g.k[0] + kd) * g.k[1] + kh) * g.k[2] + kw);
                  }
                }
              }
            store_f64(out.data, out.dtype, o_idx++, s);
          }
    }
}

// Transposed: weight [C, O/groups, KD, KH, KW]; scatter-accumulate in double.
void conv_transpose(const ConvGeom& g, const Tensor& in, const Tensor& w, const Tensor* bias, Tensor& out) {
  int64_t Cg = g.C / g.groups, Og = g.O / g.groups, P = g.out_plane(), KP = g.k_plane();
  std::vector<double> acc((size_t)(g.O * P));
  for (int64_t n = 0; n < g.N; n++) {
    for (int64_t o = 0; o < g.O; o++) {
      double b = bias ? load_f64(bias->data, bias->dtype, o) : 0.0;
      std::fill(acc.begin() + o * P, acc.begin() + (o + 1) * P, b);
    }
    for (int64_t c = 0; c < g.C; c++) {
      int64_t gi = c / Cg;
      for (int64_t id = 0; id < g.in[0]; id++)
        for (int64_t ih = 0; ih < g.in[1]; ih++)
          for (int64_t iw = 0; iw < g.in[2]; iw++) {
            double x = load_f64(in.data, in.dtype, (((n * g.C + c) * g.in[0] + id) * g.in[1] + ih) * g.in[2] + iw);
            if (x == 0) continue;
            for (int64_t og = 0; og < Og; og++) {
              int64_t o = gi * Og + og;
              for (int64_t kd = 0; kd < g.k[0]; kd++) {
                int64_t od = src(g, 0, id, kd);
                if (od < 0 || od >= g.outs[0]) continue;
                for (int64_t kh = 0; kh < g.k[1]; kh++) {
                  int64_t oh = src(g, 1, ih, kh);
                  if (oh < 0 || oh >= g.outs[1]) continue;
                  for (int64_t kw = 0; kw < g.k[2]; kw++) {
                    int64_t ow = src(g, 2, iw, kw);
                    if (ow < 0 || ow >= g.outs[2]) continue;
                    acc[o * P + (od * g.outs[1] + oh) * g.outs[2] + ow] +=
                        x * load_f64(w.data, w.dtype, (c * Og + og) * KP + (kd * g.k[1] + kh) * g.k[2] + kw);
                  }
                }
              }
            }
          }
    }
    for (int64_t i = 0; i < g.O * P; i++) store_f64(out.data, out.dtype, n * g.O * P + i, acc[i]);
  }
}

int64_t list_at(const std::vector<int64_t>& v, size_t i, int64_t def) {
  if (v.empty()) return def;
  return v.size() == 1 ? v[0] : (i < v.size() ? v[i] : def);
}

// convolution.out(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups, out)
void convolution_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &w = tensor_arg(a, 1);
  Tensor* bias = opt_tensor_arg(a, 2);
  auto stride = int_list_arg(ctx, a, 3), pad = int_list_arg(ctx, a, 4), dil = int_list_arg(ctx, a, 5);
  bool transposed = bool_arg(a, 6);
  auto outpad = int_list_arg(ctx, a, 7);
  int64_t groups = int_arg(a, 8);
  Tensor& out = tensor_arg(a, 9);
  check_contiguous(x, "convolution input");
  check_contiguous(w, "convolution weight");
  if (x.dim < 3 || x.dim > 5)
    throw_exec("only 1-D, 2-D and 3-D convolutions are supported (input shape " + x.shape_str() + ")");
  if (w.dim != x.dim) throw_exec("convolution weight rank differs from input rank");
  const int S = x.dim - 2, lead = 3 - S;  // spatial dims; leading dims of size 1
  ConvGeom g{};
  g.N = x.sizes[0];
  g.C = x.sizes[1];
  g.groups = groups;
  if (groups < 1 || g.C % groups) throw_exec("convolution: channels not divisible by groups");
  constexpr int64_t kMax = int64_t(1) << 31;  // keeps every product below in range
  int64_t op[3] = {0, 0, 0};
  for (int i = 0; i < 3; i++) {
    bool real = i >= lead;
    size_t j = real ? (size_t)(i - lead) : 0;
    g.in[i] = real ? x.sizes[2 + j] : 1;
    g.k[i] = real ? w.sizes[2 + j] : 1;
    g.s[i] = real ? list_at(stride, j, 1) : 1;
    g.p[i] = real ? list_at(pad, j, 0) : 0;
    g.d[i] = real ? list_at(dil, j, 1) : 1;
    op[i] = real ? list_at(outpad, j, 0) : 0;
    for (int64_t v : {g.in[i], g.k[i], g.s[i], g.p[i], g.d[i], op[i]})
      if (v > kMax) throw_exec("convolution: size/stride/padding/dilation out of range");
    if (g.s[i] < 1 || g.d[i] < 1 || g.p[i] < 0 || op[i] < 0) throw_exec("convolution: invalid stride/padding/dilation");
  }
  if (transposed) {
    if (w.sizes[0] != g.C) throw_exec("transposed convolution: weight does not match input channels");
    g.O = w.sizes[1] * groups;
    for (int i = 0; i < 3; i++) g.outs[i] = (g.in[i] - 1) * g.s[i] - 2 * g.p[i] + g.d[i] * (g.k[i] - 1) + op[i] + 1;
  } else {
    g.O = w.sizes[0];
    if (w.sizes[1] * groups != g.C || g.O % groups)
      throw_exec("convolution: weight " + w.shape_str() + " does not match input " + x.shape_str());
    for (int i = 0; i < 3; i++) {  // (a window past the padded input: no output, not a rounded-up one)
      const int64_t span = g.in[i] + 2 * g.p[i] - g.d[i] * (g.k[i] - 1) - 1;
      g.outs[i] = span < 0 ? 0 : span / g.s[i] + 1;
    }
  }
  for (int i = 0; i < 3; i++)
    if (g.outs[i] <= 0) throw_exec("convolution: output would be empty");
  if (bias && bias->numel() != g.O) throw_exec("convolution: bias size does not match output channels");
  std::vector<int64_t> shape = {g.N, g.O};
  for (int i = lead; i < 3; i++) shape.push_back(g.outs[i]);
  resize(out, shape);
  check_contiguous(out, "convolution output");
  if (transposed) {
    conv_transpose(g, x, w, bias, out);
    return;
  }
  if (x.dtype == DType::F32 && w.dtype == DType::F32 && out.dtype == DType::F32 && (!bias || bias->dtype == DType::F32))
    conv_f32(ctx, g, x.ptr<float>(), w.ptr<float>(), bias ? bias->ptr<float>() : nullptr, out.ptr<float>());
  else
    conv_ref(g, x, w, bias, out);
}

}  // namespace

void register_conv_kernels(KernelRegistry& r) { r.add("aten::convolution.out", &convolution_kernel, "optimized", 10); }

}  // namespace etnp
