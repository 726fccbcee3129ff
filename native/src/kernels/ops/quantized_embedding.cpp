// Weight-only quantised kernels of quantized_decomposed::: embedding_byte / embedding_4bit /
// embedding_2bit (rows of packed integer weights dequantised per row or per group:
// (q - zero_point) * scale), mixed_mm / mixed_linear (float activations times int8 weights with
// per-row or per-group scales) and add (two quantised tensors added through float, as
// dequantise -> add -> quantise in float32).
#include <vector>

#include "kernels/kernel_util.h"

namespace etnp {
namespace {

DType dtype_code(EValue** a, int i) {
  int64_t c = int_arg(a, i);
  if (c < 0 || c > 127 || !dtype_supported((int)c)) throw_exec("unsupported dtype code " + std::to_string(c));
  return (DType)c;
}
bool is_float_like(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16 || d == DType::F64; }

// bits = 8, 4 or 2: element j of a packed row. 4-bit: high nibble first, minus 8; 2-bit: lowest
// bits first, minus 2 (the packing of ExecuTorch's quantizers).
int64_t unpack(const uint8_t* row, int64_t j, int bits, bool int8) {
  if (bits == 8) return int8 ? (int64_t)(int8_t)row[j] : (int64_t)row[j];
  if (bits == 4) { uint8_t b = row[j / 2]; return (int64_t)((j % 2 == 0) ? (b >> 4) : (b & 0x0F)) - 8; }
  uint8_t b = row[j / 4];
  return (int64_t)((b >> (2 * (j % 4))) & 3) - 2;
}

// embedding_{byte,4bit,2bit}.out / .dtype_out (weight, weight_scales, weight_zero_points?,
// weight_quant_min, weight_quant_max, indices, [dtype?,] out)
template <int BITS, bool DTYPE_ARG>
void embedding_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &w = tensor_arg(a, 0), &s = tensor_arg(a, 1), &idx = tensor_arg(a, 5);
  const Tensor* zp = opt_tensor_arg(a, 2);
  Tensor& out = tensor_arg(a, DTYPE_ARG ? 7 : 6);
  if (w.dtype != DType::I8 && w.dtype != DType::U8) throw_exec(std::string(ctx.op) + ": weight must be int8 or uint8");
  if (w.dim != 2) throw_exec(std::string(ctx.op) + ": weight must be 2-D");
  if (!is_float_like(s.dtype) || (zp && !is_float_like(zp->dtype) && !is_integral(zp->dtype, false)))
    throw_exec(std::string(ctx.op) + ": scales (and zero points) must be floating point");
  if (!is_integral(idx.dtype, false)) throw_exec(std::string(ctx.op) + ": indices must be integers");
  if (!is_float_like(out.dtype)) throw_exec(std::string(ctx.op) + ": output dtype " + dtype_name(out.dtype) + " is not floating point");
  DType want = s.dtype;
  if (DTYPE_ARG && opt_present(a, 6)) want = dtype_code(a, 6);
  if (out.dtype != want) throw_exec(std::string(ctx.op) + ": output dtype " + dtype_name(out.dtype) + " does not match " + dtype_name(want));
  int64_t rows = w.sizes[0], dim = w.sizes[1] * (8 / BITS);
  if (s.dim < 1 || s.dim > 2 || s.sizes[0] != rows) throw_exec(std::string(ctx.op) + ": scales must be [rows] or [rows, groups]");
  int64_t groups = s.dim == 2 ? s.sizes[1] : 1;
  if (groups <= 0 || dim % groups) throw_exec(std::string(ctx.op) + ": the embedding dim is not divisible by the scale groups");
  if (zp && (zp->dim != s.dim || zp->numel() != s.numel())) throw_exec(std::string(ctx.op) + ": zero points must have the scales' shape");
  for (const Tensor* t : {&w, &s, zp, &idx})
    if (t) check_contiguous(*t, ctx.op);
  int64_t gsize = dim / groups;
  auto shape = shape_of(idx);
  shape.push_back(dim);
  resize(out, shape);
  check_contiguous(out, ctx.op);
  bool round_scale_type = s.dtype == DType::F16 || s.dtype == DType::BF16;  // torch computes in the scales' type
  const uint8_t* wp = (const uint8_t*)w.data;
  for (int64_t i = 0, n = idx.numel(); i < n; i++) {
    int64_t r = load_i64(idx.data, idx.dtype, i);
    if (r < 0 || r >= rows) throw_exec(std::string(ctx.op) + ": index " + std::to_string(r) + " is out of range for " + std::to_string(rows) + " rows");
    const uint8_t* row = wp + r * w.sizes[1];
    for (int64_t j = 0; j < dim; j++) {
      int64_t g = r * groups + j / gsize;
      double z = zp ? load_f64(zp->data, zp->dtype, g) : 0.0;
      double v = ((double)unpack(row, j, BITS, w.dtype == DType::I8) - z) * load_f64(s.data, s.dtype, g);
      if (round_scale_type) {
        uint64_t h = 0;  // (F16 or BF16 only; sized for store_f64 so the compiler sees no overflow)
        store_f64(&h, s.dtype, 0, v);
        v = load_f64(&h, s.dtype, 0);
      }
      store_f64(out.data, out.dtype, i * dim + j, v);
    }
  }
}

void check_mixed(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor& s, EValue* zp, Tensor& out) {
  if (x.dim != 2 || w.dim != 2) throw_exec(std::string(ctx.op) + ": input and weight must be 2-D");
  if (w.dtype != DType::I8) throw_exec(std::string(ctx.op) + ": weight must be int8");
  if (!is_float_like(x.dtype) || s.dtype != x.dtype) throw_exec(std::string(ctx.op) + ": input and scales must share a floating dtype");
  if (zp->tag != Tag::None) throw_exec(std::string(ctx.op) + ": weight zero points are not supported");
  if (!is_float_like(out.dtype)) throw_exec(std::string(ctx.op) + ": output dtype is not floating point");
  for (const Tensor* t : {&x, &w, &s}) check_contiguous(*t, ctx.op);
}

// mixed_mm.out(input [m, n], weight [n, p] int8, weight_scales [n], weight_zero_points?, out [m, p])
void mixed_mm_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &w = tensor_arg(a, 1), &s = tensor_arg(a, 2);
  Tensor& out = tensor_arg(a, 4);
  check_mixed(ctx, x, w, s, a[3], out);
  if (out.dtype != x.dtype) throw_exec("mixed_mm: output dtype does not match the input's");
  int64_t m = x.sizes[0], n = x.sizes[1], p = w.sizes[1];
  if (w.sizes[0] != n || s.numel() != n) throw_exec("mixed_mm: weight must be [n, p] and scales [n] for input [m, n]");
  resize(out, {m, p});
  const int8_t* wp = w.ptr<int8_t>();
  std::vector<double> acc((size_t)p);
  for (int64_t i = 0; i < m; i++) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t k = 0; k < n; k++) {
      double xs = load_f64(x.data, x.dtype, i * n + k) * load_f64(s.data, s.dtype, k);
      for (int64_t j = 0; j < p; j++) acc[(size_t)j] += xs * wp[k * p + j];
    }
    for (int64_t j = 0; j < p; j++) store_f64(out.data, out.dtype, i * p + j, acc[(size_t)j]);
  }
}

// mixed_linear.out(input [m, n], weight [p, n] int8, weight_scales [p] or [p, groups],
// weight_zero_points?, dtype?, out [m, p])
void mixed_linear_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &w = tensor_arg(a, 1), &s = tensor_arg(a, 2);
  Tensor& out = tensor_arg(a, 5);
  check_mixed(ctx, x, w, s, a[3], out);
  if (opt_present(a, 4) && dtype_code(a, 4) != out.dtype) throw_exec("mixed_linear: output dtype does not match dtype");
  int64_t m = x.sizes[0], n = x.sizes[1], p = w.sizes[0];
  if (w.sizes[1] != n || s.dim < 1 || s.dim > 2 || s.sizes[0] != p)
    throw_exec("mixed_linear: weight must be [p, n] and scales [p] or [p, groups] for input [m, n]");
  int64_t groups = s.dim == 2 ? s.sizes[1] : 1;
  if (groups <= 0) throw_exec("mixed_linear: scales have no groups");
  int64_t gsize = (n + groups - 1) / groups;
  resize(out, {m, p});
  const int8_t* wp = w.ptr<int8_t>();
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < p; j++) {
      double acc = 0;
      for (int64_t k = 0; k < n; k++)
        acc += load_f64(x.data, x.dtype, i * n + k) * wp[j * n + k] * load_f64(s.data, s.dtype, j * groups + k / gsize);
      store_f64(out.data, out.dtype, i * p + j, acc);
    }
}

// add.out(a, a_scale, a_zero_point, a_quant_min, a_quant_max, b, b_scale, b_zero_point,
// b_quant_min, b_quant_max, out_scale, out_zero_point, out_quant_min, out_quant_max, out)
void quantized_add_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &y = tensor_arg(a, 5);
  Tensor& out = tensor_arg(a, 14);
  if (!is_integral(x.dtype, false) || y.dtype != x.dtype || out.dtype != x.dtype)
    throw_exec("quantized add: a, b and out must share an integer dtype");
  if (shape_of(x) != shape_of(y)) throw_exec("quantized add: a " + x.shape_str() + " and b " + y.shape_str() + " differ in shape");
  int64_t qmin = int_arg(a, 12), qmax = int_arg(a, 13);
  if (qmin > qmax) throw_exec("quantized add: out_quant_min exceeds out_quant_max");
  float sa = (float)double_arg(a, 1), sb = (float)double_arg(a, 6), so = (float)double_arg(a, 10);
  int32_t za = (int32_t)int_arg(a, 2), zb = (int32_t)int_arg(a, 7), zo = (int32_t)int_arg(a, 11);
  check_contiguous(x, "quantized add a");
  check_contiguous(y, "quantized add b");
  resize_like(out, x);
  check_contiguous(out, "quantized add out");
  float inv = 1.0f / so;
  for (int64_t i = 0, n = x.numel(); i < n; i++) {
    float fa = (float)(load_i64(x.data, x.dtype, i) - za) * sa, fb = (float)(load_i64(y.data, y.dtype, i) - zb) * sb;
    float q = std::nearbyint(inv * (fa + fb));
    int64_t v = std::isfinite(q) && std::fabs(q) < 9e18f ? (int64_t)zo + (int64_t)q : (int64_t)zo;
    store_i64(out.data, out.dtype, i, std::min(std::max(v, qmin), qmax));
  }
}

}  // namespace

void register_quantized_embedding_kernels(KernelRegistry& r) {
  const char* Q = "quantized";
  r.add("quantized_decomposed::embedding_byte.out", &embedding_kernel<8, false>, Q, 7);
  r.add("quantized_decomposed::embedding_byte.dtype_out", &embedding_kernel<8, true>, Q, 8);
  r.add("quantized_decomposed::embedding_4bit.out", &embedding_kernel<4, false>, Q, 7);
  r.add("quantized_decomposed::embedding_4bit.dtype_out", &embedding_kernel<4, true>, Q, 8);
  r.add("quantized_decomposed::embedding_2bit.out", &embedding_kernel<2, false>, Q, 7);
  r.add("quantized_decomposed::embedding_2bit.dtype_out", &embedding_kernel<2, true>, Q, 8);
  r.add("quantized_decomposed::mixed_mm.out", &mixed_mm_kernel, Q, 5);
  r.add("quantized_decomposed::mixed_linear.out", &mixed_linear_kernel, Q, 6);
  r.add("quantized_decomposed::add.out", &quantized_add_kernel, Q, 15);
}

}  // namespace etnp
