// Batch statistics: _native_batch_norm_legit (training-mode batch norm: normalises with the
// batch's per-channel mean and biased variance, returns them as save_mean / save_invstd and
// updates the running statistics in place; .no_stats_out has none) and var_mean.correction_out.
#include <vector>

#include "kernels/kernel_util.h"

namespace etnp {
namespace {

double at_or(const Tensor* t, int64_t i, double def) { return t ? load_f64(t->data, t->dtype, i) : def; }
void check_channels(const Tensor* t, int64_t C, const char* what) {
  if (t && t->numel() != C) throw_exec(std::string("_native_batch_norm_legit: ") + what + " must have one value per channel");
  if (t && !is_floating(t->dtype)) throw_exec(std::string("_native_batch_norm_legit: ") + what + " must be floating point");
}

void batch_norm(const Tensor& x, const Tensor* w, const Tensor* b, Tensor* rm, Tensor* rv, bool training, double momentum,
                double eps, Tensor& out, Tensor& save_mean, Tensor& save_invstd) {
  if (x.dim < 2) throw_exec("_native_batch_norm_legit: input must have at least 2 dims");
  if (!is_floating(x.dtype) || out.dtype != x.dtype) throw_exec("_native_batch_norm_legit: input and output must share a floating dtype");
  check_contiguous(x, "_native_batch_norm_legit input");
  int64_t N = x.sizes[0], C = x.sizes[1], inner = prod(x, 2, x.dim), count = N * inner;
  check_channels(w, C, "weight");
  check_channels(b, C, "bias");
  check_channels(rm, C, "running_mean");
  check_channels(rv, C, "running_var");
  if (training && rm) check_writable(*rm, "_native_batch_norm_legit running_mean");
  if (training && rv) check_writable(*rv, "_native_batch_norm_legit running_var");
  if (!training && (!rm || !rv)) throw_exec("_native_batch_norm_legit: evaluation mode needs running statistics");
  if (training && count == 0) throw_exec("_native_batch_norm_legit: a batch with no elements has no statistics");
  resize_like(out, x);
  check_contiguous(out, "_native_batch_norm_legit output");
  if (training) {
    for (Tensor* t : {&save_mean, &save_invstd})
      if (!is_floating(t->dtype)) throw_exec("_native_batch_norm_legit: save_mean / save_invstd must be floating point");
    resize(save_mean, {C});
    resize(save_invstd, {C});
  }
  for (int64_t c = 0; c < C; c++) {
    double mean, var;
    if (training) {
      double s = 0, ss = 0;
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < inner; i++) s += load_f64(x.data, x.dtype, (n * C + c) * inner + i);
      mean = s / (double)count;
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < inner; i++) {
          double d = load_f64(x.data, x.dtype, (n * C + c) * inner + i) - mean;
          ss += d * d;
        }
      var = ss / (double)count;
      store_f64(save_mean.data, save_mean.dtype, c, mean);
      store_f64(save_invstd.data, save_invstd.dtype, c, 1.0 / std::sqrt(var + eps));
      if (rm) store_f64(rm->data, rm->dtype, c, (1 - momentum) * load_f64(rm->data, rm->dtype, c) + momentum * mean);
      if (rv) {
        double unbiased = count > 1 ? ss / (double)(count - 1) : INFINITY;
        store_f64(rv->data, rv->dtype, c, (1 - momentum) * load_f64(rv->data, rv->dtype, c) + momentum * unbiased);
      }
    } else {
      mean = load_f64(rm->data, rm->dtype, c);
      var = load_f64(rv->data, rv->dtype, c);
    }
    double scale = at_or(w, c, 1.0) / std::sqrt(var + eps), shift = at_or(b, c, 0.0);
    for (int64_t n = 0; n < N; n++)
      for (int64_t i = 0; i < inner; i++) {
        int64_t o = (n * C + c) * inner + i;
        store_f64(out.data, out.dtype, o, (load_f64(x.data, x.dtype, o) - mean) * scale + shift);
      }
  }
}

// _native_batch_norm_legit.out(input, weight?, bias?, running_mean, running_var, training,
// momentum, eps, out, save_mean, save_invstd)
void bn_legit_kernel(KernelContext&, EValue** a, size_t) {
  batch_norm(tensor_arg(a, 0), opt_tensor_arg(a, 1), opt_tensor_arg(a, 2), &tensor_arg(a, 3), &tensor_arg(a, 4), bool_arg(a, 5),
             double_arg(a, 6), double_arg(a, 7), tensor_arg(a, 8), tensor_arg(a, 9), tensor_arg(a, 10));
}
// _native_batch_norm_legit.no_stats_out(input, weight?, bias?, training, momentum, eps, out,
// save_mean, save_invstd)
void bn_legit_no_stats_kernel(KernelContext&, EValue** a, size_t) {
  if (!bool_arg(a, 3)) throw_exec("_native_batch_norm_legit.no_stats: evaluation mode needs running statistics");
  batch_norm(tensor_arg(a, 0), opt_tensor_arg(a, 1), opt_tensor_arg(a, 2), nullptr, nullptr, true, double_arg(a, 4),
             double_arg(a, 5), tensor_arg(a, 6), tensor_arg(a, 7), tensor_arg(a, 8));
}

// var_mean.correction_out(self, dim?, correction?, keepdim, out0 (var), out1 (mean))
void var_mean_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto dims = int_list_arg(ctx, a, 1);
  double correction = opt_present(a, 2) ? double_arg(a, 2) : 1.0;
  bool keepdim = bool_arg(a, 3);
  Tensor &var = tensor_arg(a, 4), &mean = tensor_arg(a, 5);
  if (!is_floating(x.dtype) || var.dtype != x.dtype || mean.dtype != x.dtype)
    throw_exec("var_mean: input and outputs must share a floating dtype");
  bool red[kMaxDims] = {};
  if (dims.empty()) for (int i = 0; i < x.dim; i++) red[i] = true;
  for (auto d : dims) {
    int k = (int)wrap_dim(d, x.dim);
    if (x.dim && red[k] && !dims.empty() && std::count(dims.begin(), dims.end(), d) > 1) throw_exec("var_mean: repeated dim");
    if (x.dim) red[k] = true;
  }
  std::vector<int64_t> shape, kept{0}, reduced{0};
  for (int i = 0; i < x.dim; i++) {
    if (!red[i]) shape.push_back(x.sizes[i]);
    else if (keepdim) shape.push_back(1);
    auto& list = red[i] ? reduced : kept;
    std::vector<int64_t> next;
    next.reserve(list.size() * (size_t)x.sizes[i]);
    for (auto o : list)
      for (int64_t j = 0; j < x.sizes[i]; j++) next.push_back(o + j * x.strides[i]);
    list.swap(next);
  }
  resize(var, shape);
  resize(mean, shape);
  check_contiguous(var, "var_mean var");
  check_contiguous(mean, "var_mean mean");
  double R = (double)reduced.size();
  for (size_t k = 0; k < kept.size(); k++) {
    double s = 0, ss = 0;
    for (auto o : reduced) s += load_f64(x.data, x.dtype, kept[k] + o);
    double m = s / R;
    for (auto o : reduced) { double d = load_f64(x.data, x.dtype, kept[k] + o) - m; ss += d * d; }
    store_f64(var.data, var.dtype, (int64_t)k, ss / std::max(0.0, R - correction));
    store_f64(mean.data, mean.dtype, (int64_t)k, m);
  }
}

}  // namespace

void register_batch_stats_kernels(KernelRegistry& r) {
  r.add("aten::_native_batch_norm_legit.out", &bn_legit_kernel, "portable", 11);
  r.add("aten::_native_batch_norm_legit.no_stats_out", &bn_legit_no_stats_kernel, "portable", 9);
  r.add("aten::var_mean.correction_out", &var_mean_kernel, "portable", 6);
}

}  // namespace etnp
