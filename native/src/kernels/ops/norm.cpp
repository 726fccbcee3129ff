// Normalisation kernels: batch norm (inference), layer norm, group norm, softmax, log_softmax.
#include <vector>

#include "kernels/compute/cpu_features.h"
#include "kernels/kernel_util.h"
#include "kernels/compute/layer_norm_f32.h"
#include "kernels/compute/vec_math.h"
#include "util/compiler.h"

namespace etnp {
namespace {

double at_or(const Tensor* t, int64_t i, double def) { return t ? load_f64(t->data, t->dtype, i) : def; }
// An optional weight or bias read by at_or for indices below N: absent, or N elements (as PyTorch requires).
void check_affine(const Tensor* t, int64_t n, const char* what) {
  if (t && t->numel() != n)
    throw_exec(std::string(what) + " of shape " + t->shape_str() + " does not match " + std::to_string(n) + " elements");
}

// _native_batch_norm_legit_no_training.out(input, weight?, bias?, running_mean, running_var, momentum, eps, out0, out1, out2)
void batch_norm_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor *w = opt_tensor_arg(a, 1), *b = opt_tensor_arg(a, 2);
  const Tensor &mean = tensor_arg(a, 3), &var = tensor_arg(a, 4);
  double eps = double_arg(a, 6);
  Tensor& out = tensor_arg(a, 7);
  check_contiguous(x, "batch_norm input");
  if (x.dim < 2) throw_exec("batch_norm expects at least 2-D input");
  int64_t N = x.sizes[0], C = x.sizes[1], inner = prod(x, 2, x.dim);
  if (mean.numel() != C || var.numel() != C) throw_exec("batch_norm: running stats do not match channels");
  check_affine(w, C, "batch_norm: weight");
  check_affine(b, C, "batch_norm: bias");
  resize_like(out, x);
  std::vector<double> scale(C), shift(C);
  for (int64_t c = 0; c < C; c++) {
    double s = at_or(w, c, 1.0) / std::sqrt(load_f64(var.data, var.dtype, c) + eps);
    scale[c] = s;
    shift[c] = at_or(b, c, 0.0) - load_f64(mean.data, mean.dtype, c) * s;
  }
  bool f32 = x.dtype == DType::F32 && out.dtype == DType::F32;
  parallel(ctx, N * C, 1, [&](int64_t s, int64_t e) {
    for (int64_t nc = s; nc < e; nc++) {
      int64_t c = nc % C;
      if (f32) {
        const float* xi = x.ptr<float>() + nc * inner;
        float* yo = out.ptr<float>() + nc * inner;
        float sc = (float)scale[c], sh = (float)shift[c];
        for (int64_t i = 0; i < inner; i++) yo[i] = xi[i] * sc + sh;
      } else {
        for (int64_t i = 0; i < inner; i++)
          store_f64(out.data, out.dtype, nc * inner + i, load_f64(x.data, x.dtype, nc * inner + i) * scale[c] + shift[c]);
      }
    }
  });
}

// Normalises `groups` contiguous runs of `len` elements; per-element affine by index map.
template <typename Affine>
void normalize_runs(const Tensor& x, Tensor& out, int64_t groups, int64_t len, double eps, Tensor* mean_out,
                    Tensor* rstd_out, Affine affine) {
  for (int64_t g = 0; g < groups; g++) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < len; i++) s += load_f64(x.data, x.dtype, g * len + i);
    double m = len ? s / (double)len : 0;
    for (int64_t i = 0; i < len; i++) {
      double d = load_f64(x.data, x.dtype, g * len + i) - m;
      ss += d * d;
    }
    double rstd = 1.0 / std::sqrt((len ? ss / (double)len : 0) + eps);
    for (int64_t i = 0; i < len; i++) {
      double v = (load_f64(x.data, x.dtype, g * len + i) - m) * rstd;
      store_f64(out.data, out.dtype, g * len + i, affine(g, i, v));
    }
    if (mean_out && mean_out->data && g < mean_out->numel()) store_f64(mean_out->data, mean_out->dtype, g, m);
    if (rstd_out && rstd_out->data && g < rstd_out->numel()) store_f64(rstd_out->data, rstd_out->dtype, g, rstd);
  }
}

// native_layer_norm.out(input, normalized_shape, weight?, bias?, eps, out0, out1, out2)
void layer_norm_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto ns = int_list_arg(ctx, a, 1);
  Tensor *w = opt_tensor_arg(a, 2), *b = opt_tensor_arg(a, 3);
  double eps = double_arg(a, 4);
  Tensor &out = tensor_arg(a, 5), &mo = tensor_arg(a, 6), &ro = tensor_arg(a, 7);
  check_contiguous(x, "layer_norm input");
  int k = (int)ns.size();
  if (k > x.dim) throw_exec("layer_norm: normalized_shape longer than input rank");
  for (int i = 0; i < k; i++)
    if (x.sizes[x.dim - k + i] != ns[i]) throw_exec("layer_norm: normalized_shape does not match input " + x.shape_str());
  int64_t len = prod(x, x.dim - k, x.dim), groups = prod(x, 0, x.dim - k);
  check_affine(w, len, "layer_norm: weight");
  check_affine(b, len, "layer_norm: bias");
  resize_like(out, x);
  auto ms = shape_of(x);
  for (int i = x.dim - k; i < x.dim; i++) ms[i] = 1;
  resize(mo, ms);
  resize(ro, ms);
  auto f32 = [&](const Tensor* t, int64_t n) { return !t || (t->dtype == DType::F32 && t->numel() >= n && t->data); };
  if (x.dtype == DType::F32 && out.dtype == DType::F32 && out.default_dim_order() && f32(w, len) && f32(b, len) &&
      (!mo.data || mo.dtype == DType::F32) && (!ro.data || ro.dtype == DType::F32) && len > 0) {
    // float32 rows (the transformer case, between delegates): the reference runtime's
    // arithmetic, bit for bit (kernels/compute/layer_norm_f32.cpp), rows across threads
    const float* xp = x.ptr<float>();
    const float* wp = w ? w->ptr<float>() : nullptr;
    const float* bp = b ? b->ptr<float>() : nullptr;
    float* yp = out.ptr<float>();
    float* mp = mo.data && mo.numel() >= groups ? mo.ptr<float>() : nullptr;
    float* rp = ro.data && ro.numel() >= groups ? ro.ptr<float>() : nullptr;
    parallel(ctx, groups, std::max<int64_t>(1, 8192 / len), [&](int64_t g0, int64_t g1) {
      layer_norm_rows_f32(xp + g0 * len, g1 - g0, len, wp, bp, eps, yp + g0 * len, mp ? mp + g0 : nullptr,
                          rp ? rp + g0 : nullptr);
    });
    return;
  }
  normalize_runs(x, out, groups, len, eps, &mo, &ro,
                 [&](int64_t, int64_t i, double v) { return v * at_or(w, i, 1.0) + at_or(b, i, 0.0); });
}

// native_group_norm.out(input, weight?, bias?, N, C, HxW, group, eps, out0, out1, out2)
void group_norm_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor *w = opt_tensor_arg(a, 1), *b = opt_tensor_arg(a, 2);
  int64_t N = int_arg(a, 3), C = int_arg(a, 4), HxW = int_arg(a, 5), G = int_arg(a, 6);
  double eps = double_arg(a, 7);
  Tensor &out = tensor_arg(a, 8), &mo = tensor_arg(a, 9), &ro = tensor_arg(a, 10);
  check_contiguous(x, "group_norm input");
  int64_t total = 0;
  if (G <= 0 || N < 0 || C < 0 || HxW < 0 || C % G || etnp::mul_overflow(N, C, &total) ||
      etnp::mul_overflow(total, HxW, &total) || total != x.numel())
    throw_exec("group_norm: N, C, HxW, group do not match the input");
  check_affine(w, C, "group_norm: weight");
  check_affine(b, C, "group_norm: bias");
  resize_like(out, x);
  resize(mo, {N, G});
  resize(ro, {N, G});
  int64_t cpg = C / G, len = cpg * HxW;
  normalize_runs(x, out, N * G, len, eps, &mo, &ro, [&](int64_t g, int64_t i, double v) {
    int64_t c = (g % G) * cpg + i / std::max<int64_t>(HxW, 1);
    return v * at_or(w, c, 1.0) + at_or(b, c, 0.0);
  });
}

// _softmax.out / _log_softmax.out (self, dim, half_to_float, out)
template <bool LOG>
void softmax_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  Tensor& out = tensor_arg(a, 3);
  check_contiguous(x, "softmax input");
  resize_like(out, x);
  int64_t outer = prod(x, 0, d), len = x.dim ? x.sizes[d] : 1, inner = prod(x, d + 1, x.dim);
  if (!LOG && inner == 1 && x.dtype == DType::F32 && out.dtype == DType::F32 && out.default_dim_order()) {
    const float* xp = x.ptr<float>();  // rows along the last dim: kernels/compute/vec_math.h
    float* yp = out.ptr<float>();
    parallel(ctx, outer, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(len, 1)), [&](int64_t s, int64_t e) {
      for (int64_t o = s; o < e; o++) vec_softmax_row(xp + o * len, yp + o * len, len);
    });
    return;
  }
  parallel(ctx, outer * inner, 64, [&](int64_t s, int64_t e) {
    for (int64_t oi = s; oi < e; oi++) {
      int64_t o = oi / inner, i = oi % inner, base = o * len * inner + i;
      double mx = -INFINITY;
      for (int64_t k = 0; k < len; k++) mx = std::max(mx, load_f64(x.data, x.dtype, base + k * inner));
      double sum = 0;
      for (int64_t k = 0; k < len; k++) sum += std::exp(load_f64(x.data, x.dtype, base + k * inner) - mx);
      for (int64_t k = 0; k < len; k++) {
        double v = load_f64(x.data, x.dtype, base + k * inner) - mx;
        store_f64(out.data, out.dtype, base + k * inner, LOG ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  });
}

}  // namespace

void register_norm_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::_native_batch_norm_legit_no_training.out", &batch_norm_kernel, P, 8);
  r.add("aten::native_layer_norm.out", &layer_norm_kernel, P, 8);
  r.add("aten::native_group_norm.out", &group_norm_kernel, P, 11);
  r.add("aten::_softmax.out", &softmax_kernel<false>, P, 4);
  r.add("aten::_log_softmax.out", &softmax_kernel<true>, P, 4);
}

}  // namespace etnp
