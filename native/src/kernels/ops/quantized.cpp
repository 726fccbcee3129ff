// quantized_decomposed:: kernels: quantize/dequantize per tensor, channel and token,
// choose_qparams.
#include <vector>

#include "kernels/kernel_util.h"

namespace etnp {
namespace {

double qclamp(double x, double inv_scale, int64_t zp, int64_t qmin, int64_t qmax) {
  double q = std::nearbyint(x * inv_scale) + (double)zp;
  if (std::isnan(q)) q = (double)zp;  // NaN inputs (or scales) quantise to the zero point
  return std::min(std::max(q, (double)qmin), (double)qmax);
}
void check_qdtype(const Tensor& t) {
  if (t.dtype != DType::I8 && t.dtype != DType::U8 && t.dtype != DType::I16 && t.dtype != DType::I32)
    throw_exec(std::string("quantized dtype ") + dtype_name(t.dtype) + " is not supported");
}

// Per-group parameters: group(i) returns the index into scales / zero points for element i, below
// GROUPS; the scales and zero points given must hold that many (a corrupt program's shorter ones
// would be read past).
void check_groups(const char* op, const Tensor* scales, const Tensor* zps, int64_t groups) {
  for (const Tensor* t : {scales, zps})
    if (t && t->numel() < groups)
      throw_exec(std::string(op) + ": " + std::to_string(t->numel()) + " quantization parameters for " +
                 std::to_string(groups) + " groups");
}
template <typename Group>
void quantize(const Tensor& x, const Tensor* scales, double scale0, const Tensor* zps, int64_t zp0, int64_t qmin,
              int64_t qmax, Tensor& out, Group group) {
  check_groups("quantize", scales, zps, x.numel() ? group(x.numel() - 1) + 1 : 0);
  resize_like(out, x);
  check_qdtype(out);
  for (int64_t i = 0; i < x.numel(); i++) {
    int64_t g = group(i);
    double s = scales ? load_f64(scales->data, scales->dtype, g) : scale0;
    int64_t z = zps ? load_i64(zps->data, zps->dtype, g) : zp0;
    store_i64(out.data, out.dtype, i, f2i(qclamp(load_f64(x.data, x.dtype, i), 1.0 / s, z, qmin, qmax)));
  }
}
template <typename Group>
void dequantize(const Tensor& x, const Tensor* scales, double scale0, const Tensor* zps, int64_t zp0, Tensor& out, Group group) {
  check_groups("dequantize", scales, zps, x.numel() ? group(x.numel() - 1) + 1 : 0);
  resize_like(out, x);
  for (int64_t i = 0; i < x.numel(); i++) {
    int64_t g = group(i);
    double s = scales ? load_f64(scales->data, scales->dtype, g) : scale0;
    int64_t z = zps ? load_i64(zps->data, zps->dtype, g) : zp0;
    // (in double: exact for the codes and zero points of every quantized dtype; a corrupt zero
    // point far outside them does not overflow)
    store_f64(out.data, out.dtype, i, ((double)load_i64(x.data, x.dtype, i) - (double)z) * s);
  }
}
auto per_tensor = [](int64_t) { return (int64_t)0; };

// quantize_per_tensor.out(input, scale, zero_point, quant_min, quant_max, dtype, out) (+ .tensor_out)
void quantize_per_tensor_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  check_contiguous(x, "quantize input");
  quantize(x, nullptr, double_arg(a, 1), nullptr, f2i(std::nearbyint(double_arg(a, 2))), int_arg(a, 3), int_arg(a, 4), tensor_arg(a, 6), per_tensor);
}
// dequantize_per_tensor.out(input, scale, zero_point, quant_min, quant_max, dtype, out_dtype?, out) (+ .tensor_out)
void dequantize_per_tensor_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  check_contiguous(x, "dequantize input");
  dequantize(x, nullptr, double_arg(a, 1), nullptr, f2i(std::nearbyint(double_arg(a, 2))), tensor_arg(a, 7), per_tensor);
}
auto channel_group(const Tensor& x, int64_t axis) {
  int d = (int)wrap_dim(axis, x.dim);
  int64_t inner = prod(x, d + 1, x.dim), n = x.sizes[d];
  return [inner, n](int64_t i) { return (i / inner) % n; };
}
// quantize_per_channel.out(input, scales, zero_points, axis, quant_min, quant_max, dtype, out)
void quantize_per_channel_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  check_contiguous(x, "quantize input");
  quantize(x, &tensor_arg(a, 1), 0, &tensor_arg(a, 2), 0, int_arg(a, 4), int_arg(a, 5), tensor_arg(a, 7),
           channel_group(x, int_arg(a, 3)));
}
// dequantize_per_channel.out(input, scales, zero_points?, axis, quant_min, quant_max, dtype, out_dtype?, out)
void dequantize_per_channel_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  check_contiguous(x, "dequantize input");
  dequantize(x, &tensor_arg(a, 1), 0, opt_tensor_arg(a, 2), 0, tensor_arg(a, 8), channel_group(x, int_arg(a, 3)));
}
auto token_group(const Tensor& x) {
  int64_t last = x.dim ? x.sizes[x.dim - 1] : 1;
  return [last](int64_t i) { return i / std::max<int64_t>(last, 1); };
}
// quantize_per_token.out(input, scales, zero_points, quant_min, quant_max, dtype, out)
void quantize_per_token_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  quantize(x, &tensor_arg(a, 1), 0, &tensor_arg(a, 2), 0, int_arg(a, 3), int_arg(a, 4), tensor_arg(a, 6), token_group(x));
}
// dequantize_per_token.out(input, scales, zero_points, quant_min, quant_max, dtype, output_dtype, out)
void dequantize_per_token_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  dequantize(x, &tensor_arg(a, 1), 0, &tensor_arg(a, 2), 0, tensor_arg(a, 7), token_group(x));
}

// Asymmetric qparams of a run of values.
void qparams(double mn, double mx, int64_t qmin, int64_t qmax, double eps, double& scale, int64_t& zp) {
  mn = std::min(mn, 0.0);
  mx = std::max(mx, 0.0);
  scale = std::max((mx - mn) / (double)(qmax - qmin), eps);
  double z = (double)qmin - mn / scale;
  zp = f2i(std::nearbyint(std::min(std::max(z, (double)qmin), (double)qmax)));
}
// choose_qparams.Tensor_out(input, quant_min, quant_max, eps, dtype, scale_out, zero_point_out)
void choose_qparams_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int64_t qmin = int_arg(a, 1), qmax = int_arg(a, 2);
  double eps = double_arg(a, 3);
  Tensor &so = tensor_arg(a, 5), &zo = tensor_arg(a, 6);
  double mn = INFINITY, mx = -INFINITY;
  for (int64_t i = 0; i < x.numel(); i++) { double v = load_f64(x.data, x.dtype, i); mn = std::min(mn, v); mx = std::max(mx, v); }
  if (x.numel() == 0) mn = mx = 0;
  double s;
  int64_t z;
  qparams(mn, mx, qmin, qmax, eps, s, z);
  resize(so, {1});
  resize(zo, {1});
  store_f64(so.data, so.dtype, 0, s);
  store_i64(zo.data, zo.dtype, 0, z);
}
// choose_qparams_per_token_asymmetric.out(input, dtype, scale_out, zero_point_out)
void choose_qparams_token_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor &so = tensor_arg(a, 2), &zo = tensor_arg(a, 3);
  int64_t last = x.dim ? x.sizes[x.dim - 1] : 1, tokens = x.numel() / std::max<int64_t>(last, 1);
  auto s = shape_of(x);
  if (!s.empty()) s.back() = 1;
  resize(so, s);
  resize(zo, s);
  for (int64_t t = 0; t < tokens; t++) {
    double mn = INFINITY, mx = -INFINITY;
    for (int64_t i = 0; i < last; i++) { double v = load_f64(x.data, x.dtype, t * last + i); mn = std::min(mn, v); mx = std::max(mx, v); }
    double sc;
    int64_t z;
    qparams(mn, mx, -128, 127, 1.1920928955078125e-07, sc, z);
    store_f64(so.data, so.dtype, t, sc);
    store_i64(zo.data, zo.dtype, t, z);
  }
}

}  // namespace

void register_quantized_kernels(KernelRegistry& r) {
  const char* Q = "quantized";
  r.add("quantized_decomposed::quantize_per_tensor.out", &quantize_per_tensor_kernel, Q, 7);
  r.add("quantized_decomposed::quantize_per_tensor.tensor_out", &quantize_per_tensor_kernel, Q, 7);
  r.add("quantized_decomposed::quantize_per_tensor.Tensor_out", &quantize_per_tensor_kernel, Q, 7);  // ExecuTorch's spelling
  r.add("quantized_decomposed::dequantize_per_tensor.out", &dequantize_per_tensor_kernel, Q, 8);
  r.add("quantized_decomposed::dequantize_per_tensor.tensor_out", &dequantize_per_tensor_kernel, Q, 8);
  r.add("quantized_decomposed::dequantize_per_tensor.Tensor_out", &dequantize_per_tensor_kernel, Q, 8);
  r.add("quantized_decomposed::quantize_per_channel.out", &quantize_per_channel_kernel, Q, 8);
  r.add("quantized_decomposed::dequantize_per_channel.out", &dequantize_per_channel_kernel, Q, 9);
  r.add("quantized_decomposed::quantize_per_token.out", &quantize_per_token_kernel, Q, 7);
  r.add("quantized_decomposed::dequantize_per_token.out", &dequantize_per_token_kernel, Q, 8);
  r.add("quantized_decomposed::choose_qparams.Tensor_out", &choose_qparams_kernel, Q, 7);
  r.add("quantized_decomposed::choose_qparams_per_token_asymmetric.out", &choose_qparams_token_kernel, Q, 4);
}

}  // namespace etnp
