// Resampling at computed positions: grid_sampler_2d (bilinear / nearest / bicubic sampling at
// normalised grid coordinates, zeros / border / reflection padding) and
// _upsample_bilinear2d_aa (antialiased bilinear resizing: a triangle filter widened by the
// downscale factor, separable over width then height).
#include <vector>

#include "kernels/kernel_util.h"

namespace etnp {
namespace {

// ---- grid_sampler_2d ----
enum Interp { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum Padding { kZeros = 0, kBorder = 1, kReflection = 2 };

double unnormalize(double c, int64_t size, bool align) {
  return align ? (c + 1) / 2 * (double)(size - 1) : ((c + 1) * (double)size - 1) / 2;
}
double clip(double c, int64_t size) { return std::min((double)(size - 1), std::max(c, 0.0)); }
// Reflects c into [twice_low / 2, twice_high / 2].
double reflect(double c, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0;
  double mn = (double)twice_low / 2, span = (double)(twice_high - twice_low) / 2;
  c = std::fabs(c - mn);
  double extra = std::fmod(c, span);
  double flips = std::floor(c / span);
  return std::fmod(flips, 2.0) == 0 ? extra + mn : span - extra + mn;
}
double apply_padding(double c, int64_t size, int pad, bool align) {
  if (pad == kBorder) return clip(c, size);
  if (pad == kReflection) {
    c = align ? reflect(c, 0, 2 * (size - 1)) : reflect(c, -1, 2 * size - 1);
    return clip(c, size);
  }
  return c;
}
// One input plane read with zero outside it.
struct Plane {
  const Tensor* t;
  int64_t base, hs, ws, H, W;
  double at(int64_t y, int64_t x) const {
    if (y < 0 || y >= H || x < 0 || x >= W) return 0;
    return load_f64(t->data, t->dtype, base + y * hs + x * ws);
  }
};
double cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
double cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }
void cubic_coeffs(double t, double c[4]) {
  const double A = -0.75;
  c[0] = cubic2(t + 1, A);
  c[1] = cubic1(t, A);
  c[2] = cubic1(1 - t, A);
  c[3] = cubic2(2 - t, A);
}

double sample(const Plane& p, double gx, double gy, int mode, int pad, bool align) {
  if (!std::isfinite(gx) || !std::isfinite(gy) || std::fabs(gx) > 1e12 || std::fabs(gy) > 1e12) return 0;
  double x = unnormalize(gx, p.W, align), y = unnormalize(gy, p.H, align);
  if (mode == kBicubic) {  // padding applies to each tap
    double x0 = std::floor(x), y0 = std::floor(y), cx[4], cy[4];
    cubic_coeffs(x - x0, cx);
    cubic_coeffs(y - y0, cy);
    double acc = 0;
    for (int i = 0; i < 4; i++) {
      double row = 0;
      for (int j = 0; j < 4; j++) {
        double tx = apply_padding(x0 - 1 + j, p.W, pad, align), ty = apply_padding(y0 - 1 + i, p.H, pad, align);
        int64_t ix = std::fabs(tx) < 1e15 ? (int64_t)tx : -1, iy = std::fabs(ty) < 1e15 ? (int64_t)ty : -1;
        row += p.at(iy, ix) * cx[j];
      }
      acc += row * cy[i];
    }
    return acc;
  }
  x = apply_padding(x, p.W, pad, align);
  y = apply_padding(y, p.H, pad, align);
  if (std::fabs(x) > 1e15 || std::fabs(y) > 1e15) return 0;  // far outside (zeros padding only)
  if (mode == kNearest) return p.at((int64_t)std::nearbyint(y), (int64_t)std::nearbyint(x));
  int64_t x0 = (int64_t)std::floor(x), y0 = (int64_t)std::floor(y);
  double fx = x - (double)x0, fy = y - (double)y0;
  return p.at(y0, x0) * (1 - fx) * (1 - fy) + p.at(y0, x0 + 1) * fx * (1 - fy) + p.at(y0 + 1, x0) * (1 - fx) * fy +
         p.at(y0 + 1, x0 + 1) * fx * fy;
}

// grid_sampler_2d.out(input, grid, interpolation_mode, padding_mode, align_corners, out):
// input [N, C, H, W], grid [N, Ho, Wo, 2] of (x, y) in [-1, 1] -> [N, C, Ho, Wo].
void grid_sampler_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &g = tensor_arg(a, 1);
  int64_t mode = int_arg(a, 2), pad = int_arg(a, 3);
  bool align = bool_arg(a, 4);
  Tensor& out = tensor_arg(a, 5);
  if (x.dim != 4 || g.dim != 4 || g.sizes[3] != 2 || g.sizes[0] != x.sizes[0])
    throw_exec("grid_sampler_2d: expected input [N, C, H, W] and grid [N, Ho, Wo, 2], got " + x.shape_str() + " and " + g.shape_str());
  if (mode < 0 || mode > 2) throw_exec("grid_sampler_2d: unknown interpolation mode " + std::to_string(mode));
  if (pad < 0 || pad > 2) throw_exec("grid_sampler_2d: unknown padding mode " + std::to_string(pad));
  if (!is_floating(x.dtype) || g.dtype != x.dtype || out.dtype != x.dtype)
    throw_exec("grid_sampler_2d: input, grid and output must share a floating dtype");
  int64_t N = x.sizes[0], C = x.sizes[1], Ho = g.sizes[1], Wo = g.sizes[2];
  resize(out, {N, C, Ho, Wo});
  check_contiguous(out, "grid_sampler_2d output");
  if (x.sizes[2] == 0 || x.sizes[3] == 0) {
    for (int64_t i = 0; i < out.numel(); i++) store_f64(out.data, out.dtype, i, 0);
    return;
  }
  parallel(ctx, N * C, 1, [&](int64_t b, int64_t e) {
    for (int64_t nc = b; nc < e; nc++) {
      int64_t n = nc / C, c = nc % C;
      Plane p{&x, n * x.strides[0] + c * x.strides[1], x.strides[2], x.strides[3], x.sizes[2], x.sizes[3]};
      for (int64_t i = 0; i < Ho; i++)
        for (int64_t j = 0; j < Wo; j++) {
          int64_t go = n * g.strides[0] + i * g.strides[1] + j * g.strides[2];
          double gx = load_f64(g.data, g.dtype, go), gy = load_f64(g.data, g.dtype, go + g.strides[3]);
          store_f64(out.data, out.dtype, (nc * Ho + i) * Wo + j, sample(p, gx, gy, (int)mode, (int)pad, align));
        }
    }
  });
}

// ---- _upsample_bilinear2d_aa ----
// Each output position reads input[lo, lo + w.size()) with normalised triangle weights.
struct Taps {
  std::vector<int64_t> lo;
  std::vector<std::vector<double>> w;
};
Taps aa_taps(int64_t in, int64_t out, bool align, const EValue* scale_arg) {
  double scale;
  if (align) scale = out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0;
  else if (scale_arg->tag != Tag::None && scale_arg->d > 0) scale = 1.0 / scale_arg->d;
  else scale = (double)in / (double)out;
  double support = scale >= 1.0 ? scale : 1.0, inv = scale >= 1.0 ? 1.0 / scale : 1.0;
  Taps t;
  for (int64_t i = 0; i < out; i++) {
    double center = scale * ((double)i + 0.5);
    int64_t lo = std::max<int64_t>((int64_t)(center - support + 0.5), 0);
    int64_t hi = std::min<int64_t>((int64_t)(center + support + 0.5), in);
    std::vector<double> w;
    double total = 0;
    for (int64_t j = lo; j < hi; j++) {
      double d = std::fabs(((double)j - center + 0.5) * inv);
      double v = d < 1.0 ? 1.0 - d : 0.0;
      w.push_back(v);
      total += v;
    }
    if (total != 0)
      for (auto& v : w) v /= total;
    t.lo.push_back(lo);
    t.w.push_back(std::move(w));
  }
  return t;
}

// _upsample_bilinear2d_aa.out(self, output_size, align_corners, scales_h?, scales_w?, out)
void upsample_aa_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto size = int_list_arg(ctx, a, 1);
  bool align = bool_arg(a, 2);
  Tensor& out = tensor_arg(a, 5);
  if (x.dim != 4) throw_exec("_upsample_bilinear2d_aa: input must be [N, C, H, W], got " + x.shape_str());
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0) throw_exec("_upsample_bilinear2d_aa: output_size must be two positive sizes");
  if (!is_floating(x.dtype) || out.dtype != x.dtype) throw_exec("_upsample_bilinear2d_aa: input and output must share a floating dtype");
  for (int i : {3, 4})
    if (a[i]->tag != Tag::None && a[i]->tag != Tag::Double) throw_exec("_upsample_bilinear2d_aa: scales must be floats or None");
  int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3], Ho = size[0], Wo = size[1];
  if (H <= 0 || W <= 0) throw_exec("_upsample_bilinear2d_aa: input spatial sizes must be positive");
  resize(out, {N, C, Ho, Wo});
  check_contiguous(out, "_upsample_bilinear2d_aa output");
  Taps th = aa_taps(H, Ho, align, a[3]), tw = aa_taps(W, Wo, align, a[4]);
  parallel(ctx, N * C, 1, [&](int64_t b, int64_t e) {
    std::vector<double> tmp((size_t)(H * Wo));  // width pass
    for (int64_t nc = b; nc < e; nc++) {
      int64_t base = (nc / C) * x.strides[0] + (nc % C) * x.strides[1];
      for (int64_t y = 0; y < H; y++)
        for (int64_t j = 0; j < Wo; j++) {
          double acc = 0;
          const auto& w = tw.w[(size_t)j];
          for (size_t k = 0; k < w.size(); k++)
            acc += w[k] * load_f64(x.data, x.dtype, base + y * x.strides[2] + (tw.lo[(size_t)j] + (int64_t)k) * x.strides[3]);
          tmp[(size_t)(y * Wo + j)] = acc;
        }
      for (int64_t i = 0; i < Ho; i++) {
        const auto& w = th.w[(size_t)i];
        for (int64_t j = 0; j < Wo; j++) {
          double acc = 0;
          for (size_t k = 0; k < w.size(); k++) acc += w[k] * tmp[(size_t)((th.lo[(size_t)i] + (int64_t)k) * Wo + j)];
          store_f64(out.data, out.dtype, (nc * Ho + i) * Wo + j, acc);
        }
      }
    }
  });
}

}  // namespace

void register_grid_sample_kernels(KernelRegistry& r) {
  r.add("aten::grid_sampler_2d.out", &grid_sampler_kernel, "portable", 6);
  r.add("aten::_upsample_bilinear2d_aa.out", &upsample_aa_kernel, "portable", 6);
}

}  // namespace etnp
