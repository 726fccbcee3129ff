// convolution.out: 1-D and 2-D, groups, stride, padding, dilation, transposed.
// float32 uses im2col (or the input directly for 1x1) + packed SGEMM, and a direct
// depthwise loop; other dtypes use a reference loop in double.
#include <vector>

#include "kernels/gemm.h"
#include "kernels/kernel_util.h"

namespace etnp {
namespace {

struct ConvGeom {
  int64_t N, C, H, W, O, KH, KW, OH, OW, groups;
  int64_t sh, sw, ph, pw, dh, dw;
};

void conv2d_f32(KernelContext& ctx, const ConvGeom& g, const float* in, const float* w, const float* bias, float* out) {
  int64_t Cg = g.C / g.groups, Og = g.O / g.groups, K = Cg * g.KH * g.KW, P = g.OH * g.OW;
  bool depthwise = Cg == 1 && Og == 1;
  if (depthwise) {
    parallel(ctx, g.N * g.C, 1, [&](int64_t b, int64_t e) {
      for (int64_t nc = b; nc < e; nc++) {
        int64_t c = nc % g.C;
        const float* x = in + nc * g.H * g.W;
        const float* k = w + c * g.KH * g.KW;
        float* y = out + nc * P;
        float bv = bias ? bias[c] : 0.f;
        for (int64_t oh = 0; oh < g.OH; oh++)
          for (int64_t ow = 0; ow < g.OW; ow++) {
            float s = bv;
            for (int64_t kh = 0; kh < g.KH; kh++) {
              int64_t ih = oh * g.sh - g.ph + kh * g.dh;
              if (ih < 0 || ih >= g.H) continue;
              for (int64_t kw = 0; kw < g.KW; kw++) {
                int64_t iw = ow * g.sw - g.pw + kw * g.dw;
                if (iw >= 0 && iw < g.W) s += x[ih * g.W + iw] * k[kh * g.KW + kw];
              }
            }
            y[oh * g.OW + ow] = s;
          }
      }
    });
    return;
  }
  bool pointwise = g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
  std::vector<float> col(pointwise ? 0 : (size_t)(K * P));
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t gi = 0; gi < g.groups; gi++) {
      const float* x = in + (n * g.C + gi * Cg) * g.H * g.W;
      const float* B = x;
      if (!pointwise) {
        parallel(ctx, K, 4, [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; k++) {
            int64_t c = k / (g.KH * g.KW), kh = (k / g.KW) % g.KH, kw = k % g.KW;
            float* dst = col.data() + k * P;
            for (int64_t oh = 0; oh < g.OH; oh++) {
              int64_t ih = oh * g.sh - g.ph + kh * g.dh;
              for (int64_t ow = 0; ow < g.OW; ow++) {
                int64_t iw = ow * g.sw - g.pw + kw * g.dw;
                dst[oh * g.OW + ow] = (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) ? x[(c * g.H + ih) * g.W + iw] : 0.f;
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

void conv2d_ref(const ConvGeom& g, const Tensor& in, const Tensor& w, const Tensor* bias, Tensor& out) {
  int64_t Cg = g.C / g.groups, Og = g.O / g.groups;
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t o = 0; o < g.O; o++) {
      int64_t gi = o / Og;
      for (int64_t oh = 0; oh < g.OH; oh++)
        for (int64_t ow = 0; ow < g.OW; ow++) {
          double s = bias ? load_f64(bias->data, bias->dtype, o) : 0.0;
          for (int64_t c = 0; c < Cg; c++)
            for (int64_t kh = 0; kh < g.KH; kh++) {
              int64_t ih = oh * g.sh - g.ph + kh * g.dh;
              if (ih < 0 || ih >= g.H) continue;
              for (int64_t kw = 0; kw < g.KW; kw++) {
                int64_t iw = ow * g.sw - g.pw + kw * g.dw;
                if (iw < 0 || iw >= g.W) continue;
                s += load_f64(in.data, in.dtype, ((n * g.C + gi * Cg + c) * g.H + ih) * g.W + iw) *
                     load_f64(w.data, w.dtype, ((o * Cg + c) * g.KH + kh) * g.KW + kw);
              }
            }
          store_f64(out.data, out.dtype, ((n * g.O + o) * g.OH + oh) * g.OW + ow, s);
        }
    }
}

// Transposed: weight [C, O/groups, KH, KW]; scatter-accumulate in double.
void conv_transpose2d(const ConvGeom& g, const Tensor& in, const Tensor& w, const Tensor* bias, Tensor& out) {
  int64_t Cg = g.C / g.groups, Og = g.O / g.groups, P = g.OH * g.OW;
  std::vector<double> acc((size_t)(g.O * P));
  for (int64_t n = 0; n < g.N; n++) {
    for (int64_t o = 0; o < g.O; o++) {
      double b = bias ? load_f64(bias->data, bias->dtype, o) : 0.0;
      std::fill(acc.begin() + o * P, acc.begin() + (o + 1) * P, b);
    }
    for (int64_t c = 0; c < g.C; c++) {
      int64_t gi = c / Cg;
      for (int64_t ih = 0; ih < g.H; ih++)
        for (int64_t iw = 0; iw < g.W; iw++) {
          double x = load_f64(in.data, in.dtype, ((n * g.C + c) * g.H + ih) * g.W + iw);
          if (x == 0) continue;
          for (int64_t og = 0; og < Og; og++) {
            int64_t o = gi * Og + og;
            for (int64_t kh = 0; kh < g.KH; kh++) {
              int64_t oh = ih * g.sh - g.ph + kh * g.dh;
              if (oh < 0 || oh >= g.OH) continue;
              for (int64_t kw = 0; kw < g.KW; kw++) {
                int64_t ow = iw * g.sw - g.pw + kw * g.dw;
                if (ow < 0 || ow >= g.OW) continue;
                acc[o * P + oh * g.OW + ow] += x * load_f64(w.data, w.dtype, ((c * Og + og) * g.KH + kh) * g.KW + kw);
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
  if (x.dim != 3 && x.dim != 4)
    throw_exec("only 1-D and 2-D convolutions are supported (input shape " + x.shape_str() + ")");
  if (w.dim != x.dim) throw_exec("convolution weight rank differs from input rank");
  bool one_d = x.dim == 3;
  ConvGeom g{};
  g.N = x.sizes[0]; g.C = x.sizes[1];
  g.H = one_d ? 1 : x.sizes[2]; g.W = x.sizes[x.dim - 1];
  g.KH = one_d ? 1 : w.sizes[2]; g.KW = w.sizes[w.dim - 1];
  g.groups = groups;
  if (groups < 1 || g.C % groups) throw_exec("convolution: channels not divisible by groups");
  if (one_d) {
    g.sh = 1; g.ph = 0; g.dh = 1;
    g.sw = list_at(stride, 0, 1); g.pw = list_at(pad, 0, 0); g.dw = list_at(dil, 0, 1);
  } else {
    g.sh = list_at(stride, 0, 1); g.sw = list_at(stride, 1, 1);
    g.ph = list_at(pad, 0, 0); g.pw = list_at(pad, 1, 0);
    g.dh = list_at(dil, 0, 1); g.dw = list_at(dil, 1, 1);
  }
  constexpr int64_t kMax = int64_t(1) << 31;  // keeps every product below in range
  for (int64_t v : {g.sh, g.sw, g.dh, g.dw, g.ph, g.pw, list_at(outpad, 0, 0), list_at(outpad, 1, 0)})
    if (v > kMax) throw_exec("convolution: stride/padding/dilation out of range");
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0) throw_exec("convolution: invalid stride/padding/dilation");
  if (transposed) {
    if (w.sizes[0] != g.C) throw_exec("transposed convolution: weight does not match input channels");
    g.O = w.sizes[1] * groups;
    int64_t oph = one_d ? 0 : list_at(outpad, 0, 0), opw = list_at(outpad, one_d ? 0 : 1, 0);
    g.OH = (g.H - 1) * g.sh - 2 * g.ph + g.dh * (g.KH - 1) + oph + 1;
    g.OW = (g.W - 1) * g.sw - 2 * g.pw + g.dw * (g.KW - 1) + opw + 1;
  } else {
    g.O = w.sizes[0];
    if (w.sizes[1] * groups != g.C || g.O % groups)
      throw_exec("convolution: weight " + w.shape_str() + " does not match input " + x.shape_str());
    g.OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
    g.OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
  }
  if (g.OH <= 0 || g.OW <= 0) throw_exec("convolution: output would be empty");
  if (bias && bias->numel() != g.O) throw_exec("convolution: bias size does not match output channels");
  if (one_d) resize(out, {g.N, g.O, g.OW});
  else resize(out, {g.N, g.O, g.OH, g.OW});
  check_contiguous(out, "convolution output");
  if (transposed) {
    conv_transpose2d(g, x, w, bias, out);
    return;
  }
  if (x.dtype == DType::F32 && w.dtype == DType::F32 && out.dtype == DType::F32 && (!bias || bias->dtype == DType::F32))
    conv2d_f32(ctx, g, x.ptr<float>(), w.ptr<float>(), bias ? bias->ptr<float>() : nullptr, out.ptr<float>());
  else
    conv2d_ref(g, x, w, bias, out);
}

}  // namespace

void register_conv_kernels(KernelRegistry& r) { r.add("aten::convolution.out", &convolution_kernel, "optimized", 10); }

}  // namespace etnp
