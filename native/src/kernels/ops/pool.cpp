// Pooling kernels (NCHW or CHW): max_pool2d(_with_indices), avg_pool2d, adaptive pools.
#include "kernels/kernel_util.h"

namespace etnp {
namespace {

struct Planes {  // input viewed as [planes, H, W]
  int64_t planes, H, W;
  int lead;      // number of leading dims (1 for CHW, 2 for NCHW)
};
Planes planes_of(const Tensor& x) {
  if (x.dim != 3 && x.dim != 4) throw_exec("pooling expects a 3-D or 4-D input, got " + x.shape_str());
  check_contiguous(x, "pooling input");
  int lead = x.dim - 2;
  return Planes{prod(x, 0, lead), x.sizes[lead], x.sizes[lead + 1], lead};
}
void resize_planes(const Tensor& x, Tensor& out, int64_t OH, int64_t OW) {
  auto s = shape_of(x);
  s[x.dim - 2] = OH;
  s[x.dim - 1] = OW;
  resize(out, s);
}
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  constexpr int64_t kMax = int64_t(1) << 31;  // keeps every product below in range
  if (s < 1 || k < 1 || d < 1 || p < 0 || s > kMax || k > kMax || d > kMax || p > kMax || in > kMax || p * 2 > k * d)
    throw_exec("pooling: invalid kernel/stride/padding");
  if (in + 2 * p - d * (k - 1) - 1 < 0) throw_exec("pooling: output would be empty (the window is larger than the padded input)");
  int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
  int64_t o = num / s + 1;
  if (ceil && (o - 1) * s >= in + p) o--;
  if (o <= 0) throw_exec("pooling: output would be empty");
  return o;
}
int64_t at(const std::vector<int64_t>& v, size_t i, int64_t def) {
  return v.empty() ? def : v.size() == 1 ? v[0] : v.at(i);
}

// max_pool2d_with_indices.out(self, kernel_size, stride, padding, dilation, ceil_mode, out, indices)
void max_pool_impl(KernelContext& ctx, EValue** a, Tensor& out, Tensor* indices) {
  const Tensor& x = tensor_arg(a, 0);
  auto ks = int_list_arg(ctx, a, 1), st = int_list_arg(ctx, a, 2), pd = int_list_arg(ctx, a, 3), dl = int_list_arg(ctx, a, 4);
  bool ceil = bool_arg(a, 5);
  Planes p = planes_of(x);
  int64_t kh = at(ks, 0, 1), kw = at(ks, 1, 1), sh = at(st, 0, kh), sw = at(st, 1, kw);
  int64_t ph = at(pd, 0, 0), pw = at(pd, 1, 0), dh = at(dl, 0, 1), dw = at(dl, 1, 1);
  int64_t OH = pool_out(p.H, kh, sh, ph, dh, ceil), OW = pool_out(p.W, kw, sw, pw, dw, ceil);
  resize_planes(x, out, OH, OW);
  if (indices) {
    resize_planes(x, *indices, OH, OW);
    check_dtype(*indices, DType::I64, "max_pool2d indices");
  }
  bool f32 = x.dtype == DType::F32 && out.dtype == DType::F32;
  parallel(ctx, p.planes, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; c++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double best = -INFINITY;
          int64_t bi = -1;
          for (int64_t i = 0; i < kh; i++) {
            int64_t ih = oh * sh - ph + i * dh;
            if (ih < 0 || ih >= p.H) continue;
            for (int64_t j = 0; j < kw; j++) {
              int64_t iw = ow * sw - pw + j * dw;
              if (iw < 0 || iw >= p.W) continue;
              int64_t src = (c * p.H + ih) * p.W + iw;
              double v = f32 ? x.ptr<float>()[src] : load_f64(x.data, x.dtype, src);
              if (v > best || std::isnan(v) || bi < 0) {
                best = v;
                bi = ih * p.W + iw;
                if (std::isnan(v)) goto done;
              }
            }
          }
        done:
          int64_t o = (c * OH + oh) * OW + ow;
          if (f32) out.ptr<float>()[o] = (float)best;
          else store_f64(out.data, out.dtype, o, best);
          if (indices) indices->ptr<int64_t>()[o] = bi;
        }
  });
}
void max_pool_with_indices_kernel(KernelContext& ctx, EValue** a, size_t) {
  max_pool_impl(ctx, a, tensor_arg(a, 6), &tensor_arg(a, 7));
}
void max_pool_kernel(KernelContext& ctx, EValue** a, size_t) { max_pool_impl(ctx, a, tensor_arg(a, 6), nullptr); }

// avg_pool2d.out(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override?, out)
void avg_pool_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto ks = int_list_arg(ctx, a, 1), st = int_list_arg(ctx, a, 2), pd = int_list_arg(ctx, a, 3);
  bool ceil = bool_arg(a, 4), include_pad = bool_arg(a, 5);
  int64_t divisor = opt_present(a, 6) ? int_arg(a, 6) : 0;
  Tensor& out = tensor_arg(a, 7);
  Planes p = planes_of(x);
  int64_t kh = at(ks, 0, 1), kw = at(ks, 1, 1), sh = at(st, 0, kh), sw = at(st, 1, kw);
  int64_t ph = at(pd, 0, 0), pw = at(pd, 1, 0);
  int64_t OH = pool_out(p.H, kh, sh, ph, 1, ceil), OW = pool_out(p.W, kw, sw, pw, 1, ceil);
  resize_planes(x, out, OH, OW);
  parallel(ctx, p.planes, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; c++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          int64_t h0 = oh * sh - ph, w0 = ow * sw - pw;
          int64_t h1 = std::min(h0 + kh, p.H + ph), w1 = std::min(w0 + kw, p.W + pw);
          int64_t pool = (h1 - h0) * (w1 - w0);
          h0 = std::max<int64_t>(h0, 0); w0 = std::max<int64_t>(w0, 0);
          h1 = std::min(h1, p.H); w1 = std::min(w1, p.W);
          double s = 0;
          for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) s += load_f64(x.data, x.dtype, (c * p.H + ih) * p.W + iw);
          int64_t div = divisor ? divisor : include_pad ? pool : (h1 - h0) * (w1 - w0);
          store_f64(out.data, out.dtype, (c * OH + oh) * OW + ow, div ? s / (double)div : NAN);
        }
  });
}

// _adaptive_avg_pool2d.out(self, output_size, out) / adaptive_max_pool2d.out(self, output_size, out, indices)
template <bool MAX>
void adaptive_pool_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto os = int_list_arg(ctx, a, 1);
  Tensor& out = tensor_arg(a, 2);
  Tensor* idx = MAX ? &tensor_arg(a, 3) : nullptr;
  Planes p = planes_of(x);
  int64_t OH = at(os, 0, 1), OW = at(os, 1, OH);
  if (OH <= 0 || OW <= 0) throw_exec("adaptive pool: invalid output size");
  resize_planes(x, out, OH, OW);
  if (idx) resize_planes(x, *idx, OH, OW);
  for (int64_t c = 0; c < p.planes; c++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t h0 = oh * p.H / OH, h1 = ((oh + 1) * p.H + OH - 1) / OH;
        int64_t w0 = ow * p.W / OW, w1 = ((ow + 1) * p.W + OW - 1) / OW;
        double s = MAX ? -INFINITY : 0;
        int64_t bi = h0 * p.W + w0;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) {
            double v = load_f64(x.data, x.dtype, (c * p.H + ih) * p.W + iw);
            if (MAX) { if (v > s || std::isnan(v)) { s = v; bi = ih * p.W + iw; } }
            else s += v;
          }
        int64_t o = (c * OH + oh) * OW + ow;
        store_f64(out.data, out.dtype, o, MAX ? s : s / (double)((h1 - h0) * (w1 - w0)));
        if (idx) store_i64(idx->data, idx->dtype, o, bi);
      }
}

}  // namespace

void register_pool_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::max_pool2d_with_indices.out", &max_pool_with_indices_kernel, P, 8);
  r.add("aten::max_pool2d.out", &max_pool_kernel, P, 7);
  r.add("aten::avg_pool2d.out", &avg_pool_kernel, P, 8);
  r.add("aten::_adaptive_avg_pool2d.out", &adaptive_pool_kernel<false>, P, 3);
  r.add("aten::adaptive_avg_pool2d.out", &adaptive_pool_kernel<false>, P, 3);
  r.add("aten::adaptive_max_pool2d.out", &adaptive_pool_kernel<true>, P, 4);
}

}  // namespace etnp
